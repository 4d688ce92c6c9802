package sessions

import (
	"context"
	"errors"
	"time"

	"myco.dev/agent/model"
)

// maxTree bounds the sessions a tree roll-up visits.
const maxTree = 500

// TreeNode is a session with its descendants, as a roll-up shows them.
type TreeNode struct {
	ID, Title, Model, Parent string
	Depth                    int // 0 for the session the tree was asked of
	Busy                     bool
	Job                      string
	LastTurn                 string // how its latest turn stands: a [TurnState] status
	State                    string // one of [States]
	Spent                    model.Usage
	Cost                     Cost // its own responses'
	Work                     time.Duration
	OpenCalls                int
	Children                 []*TreeNode
}

// Totals sums a tree: its sessions, tokens, work time, open tool calls and busy sessions.
type Totals struct {
	Sessions, Busy, OpenCalls int
	Spent                     model.Usage
	Cost                      Cost
	Work                      time.Duration
}

// Totals sums the node and its descendants.
func (n *TreeNode) Totals() Totals {
	t := Totals{Sessions: 1, OpenCalls: n.OpenCalls, Spent: n.Spent, Cost: n.Cost, Work: n.Work}
	if n.Busy {
		t.Busy = 1
	}
	for _, c := range n.Children {
		ct := c.Totals()
		t.Sessions += ct.Sessions
		t.Busy += ct.Busy
		t.OpenCalls += ct.OpenCalls
		t.Spent = t.Spent.Add(ct.Spent)
		t.Cost = t.Cost.Add(ct.Cost)
		t.Work += ct.Work
	}
	return t
}

// Lineage returns the root of session id's tree and its depth in it (0 for a root). It
// reads the store's index of parents, not a listing: its cost is the depth.
func (m *Manager) Lineage(ctx context.Context, id string) (root string, depth int, err error) {
	parent, err := m.o.Store.parentOf(ctx, id)
	if err != nil {
		return "", 0, err
	}
	root = id
	for parent != "" && depth < 1000 {
		up, err := m.o.Store.parentOf(ctx, parent)
		if errors.Is(err, ErrNotFound) {
			break // the parent's file is gone: this is as far up as it goes
		}
		if err != nil {
			return "", 0, err
		}
		root, parent = parent, up
		depth++
	}
	return root, depth, nil
}

// Tree returns session id with its descendants, each with what it is doing and what it
// cost. It visits at most maxTree sessions, found through the store's index of parents.
func (m *Manager) Tree(ctx context.Context, id string) (*TreeNode, error) {
	visited := 0
	now := time.Now()
	var walk func(id string, depth int) (*TreeNode, error)
	walk = func(id string, depth int) (*TreeNode, error) {
		sess, st, err := m.Snapshot(ctx, id)
		if err != nil {
			return nil, err
		}
		visited++
		n := &TreeNode{ID: id, Title: sess.Title, Model: st.Model, Parent: sess.Parent, Depth: depth, Busy: st.Busy, Job: st.Job,
			LastTurn: st.LastTurn.Status, State: m.State(sess, st), Spent: sess.Spent(), Cost: m.CostOf(sess), Work: sess.WorkTime(now), OpenCalls: sess.OpenCalls()}
		kids, err := m.o.Store.childrenOf(ctx, id)
		if err != nil {
			return nil, err
		}
		for _, k := range kids {
			if visited >= maxTree {
				break
			}
			c, err := walk(k, depth+1)
			if errors.Is(err, ErrNotFound) || errors.Is(err, ErrDamaged) || errors.Is(err, ErrUnsupportedSchema) {
				continue
			}
			if err != nil {
				return nil, err
			}
			n.Children = append(n.Children, c)
		}
		return n, nil
	}
	return walk(id, 0)
}
