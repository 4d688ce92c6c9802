package tools

import (
	"fmt"
	"unicode/utf8"
)

// clip bounds text for a tool result: when data is longer than limit it keeps the first
// and last limit/2 bytes (cut at UTF-8 boundaries) around a marker saying how much was
// left out.
func clip(data []byte, limit int) string {
	if len(data) <= limit {
		return string(data)
	}
	half := limit / 2
	head := half
	for head > 0 && !utf8.RuneStart(data[head]) {
		head--
	}
	tail := len(data) - half
	for tail < len(data) && !utf8.RuneStart(data[tail]) {
		tail++
	}
	return string(data[:head]) + omitted(tail-head) + string(data[tail:])
}

func omitted(n int) string { return fmt.Sprintf("\n[... %d bytes omitted ...]\n", n) }

// headTail keeps the first and the last max/2 bytes written to it and counts the rest,
// so a command's output is bounded in memory however much it prints.
type headTail struct {
	max   int
	head  []byte
	tail  []byte // ring of the last max/2 bytes once head is full
	pos   int    // next write index in tail once it is full
	total int
}

func (h *headTail) Write(p []byte) (int, error) {
	n := len(p)
	h.total += n
	half := h.max / 2
	if room := half - len(h.head); room > 0 {
		k := min(room, len(p))
		h.head = append(h.head, p[:k]...)
		p = p[k:]
	}
	for len(p) > 0 {
		if len(h.tail) < half {
			k := min(half-len(h.tail), len(p))
			h.tail = append(h.tail, p[:k]...)
			p = p[k:]
			continue
		}
		if len(p) >= half {
			copy(h.tail, p[len(p)-half:])
			h.pos = 0
			return n, nil
		}
		k := copy(h.tail[h.pos:], p)
		h.pos = (h.pos + k) % half
		p = p[k:]
	}
	return n, nil
}

// String returns the kept output with an omission marker where bytes were dropped.
func (h *headTail) String() string {
	tail := append(append([]byte(nil), h.tail[h.pos:]...), h.tail[:h.pos]...)
	dropped := h.total - len(h.head) - len(tail)
	if dropped <= 0 {
		return string(h.head) + string(tail)
	}
	for len(tail) > 0 && !utf8.RuneStart(tail[0]) {
		tail = tail[1:]
		dropped++
	}
	return string(h.head) + omitted(dropped) + string(tail)
}
