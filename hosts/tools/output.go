package tools

import (
	"fmt"
	"sync"
)

// headTail keeps the first and the last bytes of a stream and counts what it drops, so a
// command's output stays bounded however much it prints. Safe for concurrent use.
type headTail struct {
	mu    sync.Mutex // guards the fields below
	limit int        // bytes kept at each end
	head  []byte
	tail  []byte // a ring of the latest bytes once head is full
	start int    // ring start within tail
	total int64
}

func newHeadTail(limit int) *headTail { return &headTail{limit: limit} }

func (h *headTail) Write(p []byte) (int, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	n := len(p)
	h.total += int64(n)
	if room := h.limit - len(h.head); room > 0 {
		k := min(room, len(p))
		h.head = append(h.head, p[:k]...)
		p = p[k:]
	}
	for len(p) > 0 {
		if len(h.tail) < h.limit {
			k := min(h.limit-len(h.tail), len(p))
			h.tail = append(h.tail, p[:k]...)
			p = p[k:]
			continue
		}
		k := min(h.limit-h.start, len(p))
		copy(h.tail[h.start:], p[:k])
		h.start = (h.start + k) % h.limit
		p = p[k:]
	}
	return n, nil
}

// String returns the kept output with a marker where bytes were omitted.
func (h *headTail) String() string {
	h.mu.Lock()
	defer h.mu.Unlock()
	tail := append(append([]byte(nil), h.tail[h.start:]...), h.tail[:h.start]...)
	kept := int64(len(h.head) + len(tail))
	if omitted := h.total - kept; omitted > 0 {
		return fmt.Sprintf("%s\n[... %d bytes omitted; output was %d bytes, showing the first and last %d ...]\n%s",
			h.head, omitted, h.total, h.limit, tail)
	}
	return string(h.head) + string(tail)
}
