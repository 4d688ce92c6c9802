// Package humanize writes numbers for people in the words every front end uses: the
// browser's pages and the terminal's lines say a context meter, a token count and a
// duration the same way because both call it. It imports only the standard library.
package humanize

import (
	"math"
	"strconv"
	"strings"
	"time"
)

// ContextMeter is the context meter's words: "72k of 200k tokens (36%)", what the context
// holds of the model's window.
func ContextMeter(used, window int) string {
	pct := 0
	if window > 0 {
		pct = int(math.Round(100 * float64(used) / float64(window)))
	}
	return Tokens(used) + " of " + Tokens(window) + " tokens (" + strconv.Itoa(pct) + "%)"
}

// Tokens formats a token count for a person: 950, 7.2k, 72k, 1.2M.
func Tokens(n int) string {
	f := float64(n)
	switch {
	case n < 1000:
		return strconv.Itoa(n)
	case n < 10_000:
		return strings.TrimSuffix(strconv.FormatFloat(math.Floor(f/100)/10, 'f', 1, 64), ".0") + "k"
	case n < 1_000_000:
		return strconv.Itoa(n/1000) + "k"
	default:
		return strings.TrimSuffix(strconv.FormatFloat(math.Floor(f/100_000)/10, 'f', 1, 64), ".0") + "M"
	}
}

// Thousands formats n with a comma between groups of three digits: 12,345.
func Thousands(n int) string {
	if n < 0 {
		return "-" + Thousands(-n)
	}
	s := strconv.Itoa(n)
	var b strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	return b.String()
}

// Duration formats how long something took: "12 ms", "1.5 s", "2m5s".
func Duration(d time.Duration) string {
	switch {
	case d < time.Second:
		return strconv.Itoa(int(d.Milliseconds())) + " ms"
	case d < time.Minute:
		return strconv.FormatFloat(d.Seconds(), 'f', 1, 64) + " s"
	}
	return d.Round(time.Second).String()
}

// Cost is money spent, in the words every front end uses: "$0.42", "$0.0031" or "$0.008"
// below a cent (two significant digits at most), "$0.00" for nothing, and "cost unknown" when the catalog
// has no prices for some of the tokens: never a 0 it does not know.
func Cost(amount float64, known bool) string {
	if !known {
		return "cost unknown"
	}
	switch {
	case amount <= 0:
		return "$0.00"
	case amount < 0.01:
		return "$" + strings.TrimRight(strconv.FormatFloat(amount, 'f', max(2, 1-int(math.Floor(math.Log10(amount)))), 64), "0")
	default:
		return "$" + strconv.FormatFloat(amount, 'f', 2, 64)
	}
}
