package cli

import (
	"flag"
	"strings"
)

// DidYouMean names the flag that an unknown one (err, as flag.FlagSet.Parse reports it)
// was probably meant to be, as "; did you mean --NAME?", or "".
func DidYouMean(fs *flag.FlagSet, err error) string {
	_, name, ok := strings.Cut(err.Error(), "flag provided but not defined: -")
	if !ok {
		return ""
	}
	best, bestDist := "", 3 // at most two edits away
	fs.VisitAll(func(f *flag.Flag) {
		if d := editDistance(name, f.Name); d < bestDist {
			best, bestDist = f.Name, d
		}
	})
	if best == "" {
		return ""
	}
	return "; did you mean --" + best + "?"
}

// editDistance is the Levenshtein distance of a and b.
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur := make([]int, len(b)+1)
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev = cur
	}
	return prev[len(b)]
}
