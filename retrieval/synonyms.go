package retrieval

// synonymGroups lists words a shopper and a help article often use for
// the same thing. A query term from a group also searches for the other
// members, at synonymWeight. Groups are written as plain words and
// tokenized like any text, so English entries are stemmed.
var synonymGroups = [][]string{
	{"parcel", "package"},
	{"broken", "faulty", "defective"},
	{"fix", "repair"},
	{"bill", "charge"},
	{"instalment", "installment"},
	{"colour", "color"},
	{"laptop", "computer", "notebook"},
	{"call", "hotline"},
	{"voucher", "coupon"},
	{"swap", "exchange"},
	{"fapiao", "invoice"},
	{"delete", "close"},
	{"login", "sign"},
	{"退钱", "退款"},
	{"毛病", "故障", "坏了"},
	{"送修", "维修", "修理"},
	{"删掉", "删除", "注销"},
	{"邮费", "运费"},
	{"免邮", "包邮"},
	{"电话", "热线"},
	{"专票", "专用发票"},
}

// synonymWeight is the query weight of an added synonym.
const synonymWeight = 0.5

// synonyms maps an index term to the terms of its group.
var synonyms = func() map[string][]string {
	m := make(map[string][]string)
	for _, g := range synonymGroups {
		var terms []string
		for _, w := range g {
			ts := tokens(w)
			// For a CJK word keep the whole word's bigram(s), not its
			// unigrams, so 维修 does not also search for every 修.
			for _, t := range ts {
				if !isUnigram(t) || len(ts) == 1 {
					terms = append(terms, t)
				}
			}
		}
		for _, t := range terms {
			for _, u := range terms {
				if u != t {
					m[t] = append(m[t], u)
				}
			}
		}
	}
	return m
}()
