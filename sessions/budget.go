package sessions

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"math"

	"myco.dev/agent"
	"myco.dev/agent/model"
	"myco.dev/internal/humanize"
)

// ErrBudget reports a session tree whose cost reached its budget; see [BudgetError].
var ErrBudget = errors.New("sessions: the budget is reached")

// BudgetError reports that what the tree of session Root cost reached its budget: a turn
// in it stops before its next model request, and no child is created in it.
type BudgetError struct {
	Root   string  // the session whose tree has the budget
	Budget float64 // its max_cost
	Spent  Cost    // what the tree cost
}

func (e *BudgetError) Error() string {
	return fmt.Sprintf("the session tree of %s cost %s, which reached its budget of %s", e.Root,
		humanize.Cost(e.Spent.Amount, true), humanize.Cost(e.Budget, true))
}

func (e *BudgetError) Unwrap() error { return ErrBudget }

// budgetOf returns the budget of session s's own tree: its max_cost, else for a root the
// service's default ([ManagerOptions].MaxCost); 0 means none.
func (m *Manager) budgetOf(s *Session) float64 {
	if s.MaxCost > 0 {
		return s.MaxCost
	}
	if s.Parent == "" {
		return m.o.MaxCost
	}
	return 0
}

// CheckBudget returns a [BudgetError] when session id, or any session above it, has a
// budget that what its tree cost has reached. A budget counts every descendant.
func (m *Manager) CheckBudget(ctx context.Context, id string) error {
	for depth := 0; id != "" && depth < 1000; depth++ {
		sess, _, err := m.Snapshot(ctx, id)
		if errors.Is(err, ErrNotFound) {
			return nil // an ancestor's file is gone: nothing above holds a budget we can read
		}
		if err != nil {
			return err
		}
		if b := m.budgetOf(sess); b > 0 {
			tree, err := m.Tree(ctx, id)
			if err != nil {
				return err
			}
			if c := tree.Totals().Cost; c.Amount >= b {
				return &BudgetError{Root: id, Budget: b, Spent: c}
			}
		}
		id = sess.Parent
	}
	return nil
}

// SetMaxCost sets the budget of the tree of session id's root ([Manager.Lineage]): the
// budget a Retry raises. 0 takes it away (the service's default applies again).
func (m *Manager) SetMaxCost(ctx context.Context, id string, maxCost float64) error {
	if err := checkMaxCost(maxCost); err != nil {
		return err
	}
	root, _, err := m.Lineage(ctx, id)
	if err != nil {
		return err
	}
	return m.update(ctx, root, func(s *Session) error { s.MaxCost = maxCost; return nil })
}

// ErrInvalidBudget reports a max_cost that is not a number of 0 or more.
var ErrInvalidBudget = errors.New("sessions: max_cost must be a number, 0 or more (0 means none)")

func checkMaxCost(v float64) error {
	if !(v >= 0) || math.IsInf(v, 0) {
		return ErrInvalidBudget
	}
	return nil
}

// budgeted is a model that asks check before every request: a tree over its budget stops
// at its next model step, with what the turn did so far saved.
type budgeted struct {
	agent.Model
	check func(ctx context.Context) error
}

func (b budgeted) Stream(ctx context.Context, req model.Request) iter.Seq2[model.Chunk, error] {
	if err := b.check(ctx); err != nil {
		return func(yield func(model.Chunk, error) bool) { yield(nil, err) }
	}
	return b.Model.Stream(ctx, req)
}

// Warm passes a warm-up on to the model it wraps, when that one warms.
func (b budgeted) Warm(ctx context.Context) {
	if w, ok := b.Model.(model.Warmer); ok {
		w.Warm(ctx)
	}
}
