package retrieval

import "strings"

// stem removes common English inflections and a few derivational suffixes,
// so that the forms a shopper and a help article use for one word share a
// term:
//
//   - plural -s/-es/-ies: "ships", "boxes", "policies";
//   - -ing and -ed: "shipping", "shipped";
//   - -ment, -ation, -ly and the y of -ery, on words long enough that the
//     rest is still a word: "payment" and "pay", "cancellation" and
//     "cancel", "monthly" and "month", "delivery" and "deliver";
//   - a final e and a doubled final consonant: "charge" and "charged"
//     share "charg", "cancelled" and "cancel" share "cancel".
//
// A stem need only be consistent, not a real word: documents and queries
// go through the same function.
func stem(w string) string {
	switch {
	case len(w) > 4 && strings.HasSuffix(w, "ies"):
		w = w[:len(w)-3] + "y"
	case len(w) > 4 && strings.HasSuffix(w, "sses"):
		w = w[:len(w)-2]
	case len(w) > 3 && (strings.HasSuffix(w, "ches") || strings.HasSuffix(w, "shes") ||
		strings.HasSuffix(w, "xes") || strings.HasSuffix(w, "zes")):
		w = w[:len(w)-2]
	case len(w) > 3 && strings.HasSuffix(w, "s") && !strings.HasSuffix(w, "ss") &&
		!strings.HasSuffix(w, "us") && !strings.HasSuffix(w, "is"):
		w = w[:len(w)-1]
	}
	switch {
	case len(w) > 5 && strings.HasSuffix(w, "ing"):
		w = w[:len(w)-3]
	case len(w) > 4 && strings.HasSuffix(w, "ed"):
		w = w[:len(w)-2]
	}
	w = derivational(w)
	if len(w) > 4 && w[len(w)-1] == 'e' {
		w = w[:len(w)-1]
	}
	if n := len(w); n > 3 && w[n-1] == w[n-2] && !isVowel(w[n-1]) {
		w = w[:n-1]
	}
	return w
}

// derivational removes one derivational suffix when enough letters
// remain for the rest to be a word: -ment, -ation, -ion after t or s,
// -ity, -able, -al and -ly, or the y of -ery.
func derivational(w string) string {
	switch n := len(w); {
	case n >= 7 && strings.HasSuffix(w, "ment"):
		return w[:n-4]
	case n >= 9 && strings.HasSuffix(w, "ation"):
		return w[:n-5]
	case n >= 7 && (strings.HasSuffix(w, "tion") || strings.HasSuffix(w, "sion")):
		return w[:n-3]
	case n >= 7 && strings.HasSuffix(w, "ity"):
		return w[:n-3]
	case n >= 7 && strings.HasSuffix(w, "able"):
		return w[:n-4]
	case n >= 7 && strings.HasSuffix(w, "al"):
		return w[:n-2]
	case n >= 7 && strings.HasSuffix(w, "ly"):
		return w[:n-2]
	case n >= 7 && strings.HasSuffix(w, "ery"):
		return w[:n-1]
	}
	return w
}

// baseForms maps irregular past forms of verbs to their base form, which
// is then stemmed like any word, and number words to digits, so "paid"
// finds "payment" and "seven days" finds "7 days".
var baseForms = map[string]string{
	"paid": "pay", "bought": "buy", "sent": "send", "sold": "sell",
	"spent": "spend", "gave": "give", "given": "give", "brought": "bring",
	"broke": "break", "chose": "choose", "chosen": "choose", "forgot": "forget",
	"forgotten": "forget", "left": "leave", "lost": "lose", "made": "make",
	"wrote": "write", "written": "write", "came": "come", "went": "go",
	"gone": "go", "told": "tell", "thought": "think", "found": "find",

	"two": "2", "three": "3", "four": "4", "five": "5", "six": "6",
	"seven": "7", "eight": "8", "nine": "9", "ten": "10", "eleven": "11",
	"twelve": "12", "fifteen": "15", "twenty": "20", "thirty": "30",
	"sixty": "60", "ninety": "90", "hundred": "100",
}
