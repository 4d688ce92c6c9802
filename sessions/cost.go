package sessions

import (
	"maps"
	"slices"

	"myco.dev/agent/model"
	"myco.dev/api"
)

// Prices are what a model's tokens cost, in money per million tokens (the catalog's
// currency; myco only multiplies).
type Prices struct {
	Input      float64 // a prompt token neither read from nor written to a cache
	Output     float64 // a generated token, reasoning included
	CacheRead  float64 // a prompt token read from the provider's cache
	CacheWrite float64 // a prompt token written to it
}

// Cost returns what usage u cost at prices p. The protocols count cached prompt tokens in
// Usage.Input as well, so only the rest of the input is priced as input.
func (p Prices) Cost(u model.Usage) float64 {
	plain := max(u.Input-u.CacheRead-u.CacheWrite, 0)
	return (float64(plain)*p.Input + float64(u.Output)*p.Output +
		float64(u.CacheRead)*p.CacheRead + float64(u.CacheWrite)*p.CacheWrite) / 1e6
}

// Cost is money spent: a turn's, a session's or a tree's. Known is false when some of
// the tokens came from a model the catalog has no prices for: Amount then counts only the
// priced ones, and a front end says "cost unknown", never a 0 it does not know.
type Cost struct {
	Amount float64
	Known  bool
}

// API returns c as the API carries it.
func (c Cost) API() api.Cost { return api.Cost{Amount: c.Amount, Known: c.Known} }

// Add returns the sum of c and d, known only when both are.
func (c Cost) Add(d Cost) Cost { return Cost{Amount: c.Amount + d.Amount, Known: c.Known && d.Known} }

// Pricer is a [Models] that knows prices: those of model key, or false when the catalog
// has none for it.
type Pricer interface {
	Prices(key string) (Prices, bool)
}

// prices returns the prices of model key, if the catalog has them.
func (m *Manager) prices(key string) (Prices, bool) {
	if p, ok := m.models().(Pricer); ok {
		return p.Prices(key)
	}
	return Prices{}, false
}

// UsageCost returns what usage u of model key cost.
func (m *Manager) UsageCost(key string, u model.Usage) Cost { return m.usageCost(key, u) }

// usageCost prices usage of model key.
func (m *Manager) usageCost(key string, u model.Usage) Cost {
	p, ok := m.prices(key)
	if !ok {
		return Cost{}
	}
	return Cost{Amount: p.Cost(u), Known: true}
}

// CostOf returns what session s's responses cost, each priced by the model that gave it.
// A session that spent nothing costs a known 0 if its model has prices, else an unknown.
func (m *Manager) CostOf(s *Session) Cost {
	by := s.SpentByModel()
	if len(by) == 0 {
		_, ok := m.prices(m.modelOf(s))
		return Cost{Known: ok}
	}
	c := Cost{Known: true}
	for _, k := range slices.Sorted(maps.Keys(by)) {
		c = c.Add(m.usageCost(k, by[k]))
	}
	return c
}
