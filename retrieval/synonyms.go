package retrieval

// synonymGroups lists words and phrases a shopper and a help article often
// use for the same thing. Entries are tokenized like any text, so English
// entries are stemmed and a Chinese entry is its character bigrams:
//
//   - a word (an entry of one term: "refund", 退款) in a question also
//     searches for the group's other entries, at synonymWeight;
//   - a phrase (an entry of several terms: "money back", 不想要) does the
//     same when its terms come in a row in a question, stop words aside
//     ("get my money back"); a Chinese phrase is also searched for (by its
//     bigrams) when another entry of its group is in the question, an
//     English one is not ("refund" does not search for "back").
var synonymGroups = [][]string{
	{"parcel", "package", "box"},
	{"broken", "faulty", "defective", "stop work", "not work", "malfunction"},
	{"damaged", "crushed", "dented", "smashed"},
	{"lose", "missing", "never arrive", "never receive"},
	{"fix", "repair", "mend"},
	{"bill", "charge"},
	{"fee", "cost"},
	{"postage", "shipping fee", "shipping cost", "delivery fee"},
	{"twice", "duplicate", "two time", "double charge"},
	{"instalment", "installment", "monthly payment", "pay monthly", "split cost", "split payment"},
	{"fail", "decline", "reject", "unsuccessful"},
	{"colour", "color"},
	{"laptop", "computer", "notebook"},
	{"call", "hotline", "phone number", "telephone"},
	{"support", "customer service", "agent", "representative", "human", "real person"},
	{"chat", "talk", "speak"},
	{"contact", "complaint", "reach"},
	{"scam", "fraud", "fake", "phishing", "pretend"},
	{"voucher", "coupon", "promo code", "discount code"},
	{"swap", "exchange", "replace", "trade"},
	{"fapiao", "invoice"},
	{"wrong", "incorrect", "mistake"},
	{"delete", "close", "deactivate", "erase"},
	{"login", "sign", "log"},
	{"forget", "remember"},
	{"verification", "authentication", "two factor", "two step"},
	{"lock", "frozen", "freeze", "blocked", "suspended", "too many attempt"},
	{"refund", "reimburse", "money back", "repay"},
	{"return", "send back"},
	{"reason", "change mind", "unwanted"},
	{"warranty", "guarantee"},
	{"extend", "extra"},
	{"international", "abroad", "overseas", "another country"},
	{"customs", "duty", "import tax", "tariff"},
	{"liquid", "water", "spill"},
	{"order", "purchase"},
	{"modify", "add item", "remove item"},
	{"address", "street"},
	{"level", "tier", "rank"},
	{"point", "reward", "loyalty"},
	{"drop", "cheaper", "lower"},
	{"退钱", "退款"},
	{"毛病", "故障", "坏了", "质量问题"},
	{"送修", "维修", "修理"},
	{"删掉", "删除", "注销"},
	{"邮费", "运费", "快递费"},
	{"免邮", "包邮"},
	{"电话", "热线"},
	{"专票", "专用发票"},
	{"无理由", "不喜欢", "不想要", "不合适"},
	{"拆封", "开封", "拆开"},
	{"换新", "换货"},
	{"压坏", "碎了", "破损", "损坏"},
	{"丢件", "丢失", "没收到"},
	{"锁定", "冻结", "封号"},
	{"登录", "登不上", "登陆"},
	{"人工", "真人", "客服"},
	{"发票", "开票"},
	{"积分", "抵扣"},
	{"到账", "退回"},
	{"码数", "尺码", "尺寸"},
	{"送到", "到货", "送达", "收到货"},
}

// synonymWeight is the query weight of an added synonym.
const synonymWeight = 0.5

// synonyms maps a word to the terms its groups add to a question.
var synonyms map[string][]string

// phrases maps the first term of a phrase to the phrases starting with it.
var phrases map[string][]phrase

// phrase is a run of terms that stands for the other entries of a group.
type phrase struct {
	terms []string // the phrase's terms, two or more
	adds  []string // the terms it adds to a question
}

func init() {
	synonyms = make(map[string][]string)
	phrases = make(map[string][]phrase)
	for _, g := range synonymGroups {
		entries := make([][]string, len(g))
		for i, w := range g {
			entries[i] = entryTerms(w)
		}
		// adds returns the terms entry i brings into a question.
		adds := func(i int) []string {
			var out []string
			for j, e := range entries {
				if j != i && (len(e) == 1 || hasCJK(g[j])) {
					out = append(out, e...)
				}
			}
			return out
		}
		for i, e := range entries {
			if len(e) == 1 {
				synonyms[e[0]] = append(synonyms[e[0]], adds(i)...)
			} else if len(e) > 1 {
				phrases[e[0]] = append(phrases[e[0]], phrase{terms: e, adds: adds(i)})
			}
		}
	}
}

// entryTerms returns the terms of a synonym entry: its tokens, but for a
// Chinese word its bigrams alone (or its one character), so 维修 does not
// also search for every 修.
func entryTerms(w string) []string {
	ts := tokens(w)
	if len(ts) == 1 {
		return ts
	}
	var out []string
	for _, t := range ts {
		if !isUnigram(t) {
			out = append(out, t)
		}
	}
	return out
}

// hasCJK reports whether s has a CJK character.
func hasCJK(s string) bool {
	for _, r := range s {
		if isCJK(r) {
			return true
		}
	}
	return false
}

// eachSynonym calls fn with each term the synonym groups add to a
// question of terms all (in order), and the run of terms of all it stands
// for: one term for a word's synonym, several for a phrase's. Phrases are
// matched over the terms without single Chinese characters, so 不想要
// matches the bigrams 不想, 想要 of a question whatever characters lie
// between them in all.
func eachSynonym(all []string, fn func(syn string, from []string)) {
	phrased := false // some term starts a phrase
	for i, t := range all {
		for _, s := range synonyms[t] {
			fn(s, all[i:i+1])
		}
		phrased = phrased || len(phrases[t]) > 0
	}
	if !phrased {
		return
	}
	run := make([]string, 0, len(all)) // all without CJK unigrams
	for _, t := range all {
		if !isUnigram(t) {
			run = append(run, t)
		}
	}
	for i, t := range run {
		for _, p := range phrases[t] {
			if hasPrefix(run[i:], p.terms) {
				for _, s := range p.adds {
					fn(s, run[i:i+len(p.terms)])
				}
			}
		}
	}
}

// hasPrefix reports whether terms starts with prefix.
func hasPrefix(terms, prefix []string) bool {
	if len(terms) < len(prefix) {
		return false
	}
	for i, p := range prefix {
		if terms[i] != p {
			return false
		}
	}
	return true
}
