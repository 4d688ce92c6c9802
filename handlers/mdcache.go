package handlers

import (
	"hash/maphash"
	"sync"

	"myco.dev/views"
)

// mdCache keeps rendered Markdown: a finished message never changes, so a transcript is
// rendered once and then only copied. It is bounded by the bytes it holds; when full it
// starts over. Safe for concurrent use.
type mdCache struct {
	seed maphash.Seed
	max  int

	mu    sync.Mutex // guards the fields below
	m     map[mdKey]views.MarkdownHTML
	bytes int
}

type mdKey struct {
	sum uint64
	n   int
}

func newMDCache(maxBytes int) *mdCache {
	return &mdCache{seed: maphash.MakeSeed(), max: maxBytes, m: map[mdKey]views.MarkdownHTML{}}
}

// put keeps out as src rendered with o: a streamed answer whose parts were rendered as
// they settled.
func (c *mdCache) put(src string, o views.MarkdownOptions, out views.MarkdownHTML) {
	k := c.key(src, o)
	c.mu.Lock()
	defer c.mu.Unlock()
	c.add(k, src, out)
}

// render returns src rendered with o, from the cache when it was rendered before. The key
// is the source, its length and the options (a 64-bit hash of them); o is the same for
// every message of a session's transcript.
func (c *mdCache) render(src string, o views.MarkdownOptions) views.MarkdownHTML {
	k := c.key(src, o)
	c.mu.Lock()
	out, ok := c.m[k]
	c.mu.Unlock()
	if ok {
		return out
	}
	out = views.Markdown(src, o)
	c.mu.Lock()
	defer c.mu.Unlock()
	c.add(k, src, out)
	return out
}

func (c *mdCache) key(src string, o views.MarkdownOptions) mdKey {
	var h maphash.Hash
	h.SetSeed(c.seed)
	h.WriteString(o.WorkspaceDir)
	h.WriteByte(0)
	h.WriteString(o.WorkspaceURL)
	h.WriteByte(0)
	h.WriteString(o.DocDir)
	h.WriteByte(0)
	h.WriteString(o.ProjectDir)
	h.WriteByte(0)
	h.WriteString(o.ProjectURL)
	h.WriteByte(0)
	h.WriteString(src)
	return mdKey{sum: h.Sum64(), n: len(src)}
}

// add keeps out under k; c.mu is held. When the cache is full it starts over.
func (c *mdCache) add(k mdKey, src string, out views.MarkdownHTML) {
	if c.bytes+len(out.String()) > c.max {
		clear(c.m)
		c.bytes = 0
	}
	c.m[k] = out
	c.bytes += len(out.String()) + len(src)
}
