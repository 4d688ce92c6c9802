package snapshot

import (
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"
)

func randomLines(r *rand.Rand, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = string(rune('a'+r.IntN(4))) + "\n"
	}
	return out
}

func lcs(a, b []string) int {
	dp := make([][]int, len(a)+1)
	for i := range dp {
		dp[i] = make([]int, len(b)+1)
	}
	for i := len(a) - 1; i >= 0; i-- {
		for j := len(b) - 1; j >= 0; j-- {
			if a[i] == b[j] {
				dp[i][j] = dp[i+1][j+1] + 1
			} else {
				dp[i][j] = max(dp[i+1][j], dp[i][j+1])
			}
		}
	}
	return dp[0][0]
}

// TestDiffLinesMinimal: the edits rebuild both versions and are as few as the longest
// common subsequence allows.
func TestDiffLinesMinimal(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for i := range 500 {
		a, b := randomLines(r, r.IntN(30)), randomLines(r, r.IntN(30))
		edits := diffLines(a, b)
		var ra, rb []string
		changes := 0
		for _, e := range edits {
			switch e.op {
			case ' ':
				if a[e.a] != b[e.b] {
					t.Fatalf("case %d: kept line %d/%d differs", i, e.a, e.b)
				}
				ra, rb = append(ra, a[e.a]), append(rb, b[e.b])
			case '-':
				ra = append(ra, a[e.a])
				changes++
			case '+':
				rb = append(rb, b[e.b])
				changes++
			}
		}
		if strings.Join(ra, "") != strings.Join(a, "") || strings.Join(rb, "") != strings.Join(b, "") {
			t.Fatalf("case %d: edits do not rebuild the versions: %v", i, edits)
		}
		if want := len(a) + len(b) - 2*lcs(a, b); changes != want {
			t.Fatalf("case %d: %d changes, want %d", i, changes, want)
		}
	}
}

// apply applies unified hunks to a, as patch(1) would with no fuzz.
func apply(t *testing.T, a []string, patch string) string {
	t.Helper()
	var out []string
	pos := 0
	lines := strings.SplitAfter(patch, "\n")
	for i := 0; i < len(lines); i++ {
		l := lines[i]
		if l == "" {
			continue
		}
		if strings.HasPrefix(l, "@@ -") {
			f := strings.Fields(l)
			start, _, _ := strings.Cut(strings.TrimPrefix(f[1], "-"), ",")
			n, _ := strconv.Atoi(start)
			_, count, _ := strings.Cut(strings.TrimPrefix(f[1], "-"), ",")
			if count != "0" {
				n--
			}
			for pos < n {
				out = append(out, a[pos])
				pos++
			}
			continue
		}
		text := l[1:]
		if i+1 < len(lines) && strings.HasPrefix(lines[i+1], `\ No newline`) {
			text = strings.TrimSuffix(text, "\n")
			i++
		}
		switch l[0] {
		case ' ':
			if a[pos] != text {
				t.Fatalf("context %q does not match line %d %q", text, pos, a[pos])
			}
			out = append(out, text)
			pos++
		case '-':
			if a[pos] != text {
				t.Fatalf("removed %q does not match line %d %q", text, pos, a[pos])
			}
			pos++
		case '+':
			out = append(out, text)
		default:
			t.Fatalf("bad patch line %q", l)
		}
	}
	out = append(out, a[pos:]...)
	return strings.Join(out, "")
}

func TestUnifiedApplies(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for i := range 300 {
		a, b := randomLines(r, r.IntN(40)), randomLines(r, r.IntN(40))
		if r.IntN(3) == 0 && len(a) > 0 {
			a[len(a)-1] = strings.TrimSuffix(a[len(a)-1], "\n")
		}
		if r.IntN(3) == 0 && len(b) > 0 {
			b[len(b)-1] = strings.TrimSuffix(b[len(b)-1], "\n")
		}
		patch, _, _, cut := unified(a, b, diffLines(a, b), 1+r.IntN(3), 1<<20)
		if cut {
			t.Fatal("cut")
		}
		if got := apply(t, a, patch); got != strings.Join(b, "") {
			t.Fatalf("case %d: patch\n%s\napplied = %q, want %q", i, patch, got, strings.Join(b, ""))
		}
	}
}

func TestUnifiedText(t *testing.T) {
	var a []string
	for i := 1; i <= 20; i++ {
		a = append(a, fmt.Sprintf("line %d\n", i))
	}
	b := append([]string(nil), a...)
	b[1] = "line two\n"
	b = append(b[:10], b[11:]...) // drop line 11
	b = append(b, "tail")         // no newline at the end
	patch, added, deleted, cut := unified(a, b, diffLines(a, b), 3, 1<<20)
	// what GNU diff -u prints after its two header lines
	want := `@@ -1,5 +1,5 @@
 line 1
-line 2
+line two
 line 3
 line 4
 line 5
@@ -8,7 +8,6 @@
 line 8
 line 9
 line 10
-line 11
 line 12
 line 13
 line 14
@@ -18,3 +17,4 @@
 line 18
 line 19
 line 20
+tail
\ No newline at end of file
`
	if patch != want || added != 2 || deleted != 2 || cut {
		t.Errorf("unified = %q, +%d -%d cut %v; want\n%s", patch, added, deleted, cut, want)
	}
	short, added, deleted, cut := unified(a, b, diffLines(a, b), 3, 60)
	if !cut || !strings.HasSuffix(short, "\n") || len(short) > 60 || !strings.HasPrefix(want, short) || added != 2 || deleted != 2 {
		t.Errorf("unified cut at 60 = %q, cut %v; want a prefix of whole lines", short, cut)
	}
}

func TestDiffLinesBounded(t *testing.T) {
	// two versions with nothing in common past the bound: all removed, all added
	var a, b []string
	for i := range 3 * maxEditDistance {
		a = append(a, fmt.Sprintf("a%d\n", i))
		b = append(b, fmt.Sprintf("b%d\n", i))
	}
	edits := diffLines(a, b)
	if len(edits) != len(a)+len(b) {
		t.Errorf("%d edits, want %d", len(edits), len(a)+len(b))
	}
}
