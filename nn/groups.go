package nn

import (
	"fmt"
	"math"
	"slices"
)

// ParamGroup is a group of parameters with settings of its own, as one
// dict of PyTorch's param_groups: AdamW's usual split gives weight decay
// to the matrices and none to biases and norm scales (DecayGroups).
type ParamGroup struct {
	Params []*Param
	// WeightDecay is the group's weight decay. With groups it is always the
	// group's: the options' WeightDecay must be 0.
	WeightDecay float64
	// LRScale multiplies the optimizer's LR (as SetLR and a schedule set it)
	// for this group; 0 means 1.
	LRScale float64
}

// DecayGroups splits params as nanoGPT's configure_optimizers does: those
// of 2 dimensions or more (weights, embeddings) decay by weightDecay, those
// of fewer (biases, LayerNorm's gamma and beta) do not. A group left empty
// is omitted. Parameters keep their order within each group.
func DecayGroups(params []*Param, weightDecay float64) []ParamGroup {
	var decay, none []*Param
	for _, p := range params {
		if p != nil && p.Value != nil && len(p.Value.Shape()) >= 2 {
			decay = append(decay, p)
		} else {
			none = append(none, p) // a nil one is reported by the optimizer
		}
	}
	var gs []ParamGroup
	if len(decay) > 0 {
		gs = append(gs, ParamGroup{Params: decay, WeightDecay: weightDecay})
	}
	if len(none) > 0 {
		gs = append(gs, ParamGroup{Params: none})
	}
	return gs
}

// NewAdamGroups returns an Adam (with Decoupled, AdamW) optimizer over the
// parameters of groups, each group with its weight decay and LR scale, as
// torch.optim.AdamW(param_groups). o's WeightDecay must be 0 (each group
// has its own); its other settings apply to every group, and its zero
// Beta1, Beta2 and Eps take PyTorch's defaults as in NewAdam. A step costs
// one fused dispatch per group (and memory block). Checkpoints record the
// groups: a load needs an optimizer made with the same groups.
func NewAdamGroups(groups []ParamGroup, o AdamOptions) (*Adam, error) {
	params, parts, err := splitGroups(groups, o.WeightDecay)
	if err != nil {
		return nil, err
	}
	if err := o.defaults(); err != nil {
		return nil, err
	}
	opt, err := newParts(params, parts, 2)
	if err != nil {
		return nil, err
	}
	opt.grouped = true
	return newAdam(opt, o)
}

// NewSGDGroups returns an SGD optimizer over the parameters of groups, each
// group with its weight decay and LR scale, as NewAdamGroups.
func NewSGDGroups(groups []ParamGroup, o SGDOptions) (*SGD, error) {
	params, parts, err := splitGroups(groups, o.WeightDecay)
	if err != nil {
		return nil, err
	}
	if err := o.validate(); err != nil {
		return nil, err
	}
	moments := 0
	if o.Momentum != 0 {
		moments = 1
	}
	opt, err := newParts(params, parts, moments)
	if err != nil {
		return nil, err
	}
	opt.grouped = true
	if err := opt.rateOnDevice(o.LR); err != nil {
		return nil, err
	}
	return &SGD{optimizer: opt, o: o}, nil
}

// splitGroups checks groups and returns their parameters in order and the
// optimizer's parts.
func splitGroups(groups []ParamGroup, optionsDecay float64) ([]*Param, []optPart, error) {
	if len(groups) == 0 {
		return nil, nil, fmt.Errorf("nn: optimizer: no parameter groups")
	}
	if optionsDecay != 0 {
		return nil, nil, fmt.Errorf("nn: optimizer: weight decay %g in the options of a grouped optimizer: set it per group", optionsDecay)
	}
	var params []*Param
	var parts []optPart
	for i, g := range groups {
		if len(g.Params) == 0 {
			return nil, nil, fmt.Errorf("nn: optimizer: group %d has no parameters", i)
		}
		pt, err := groupPart(g)
		if err != nil {
			return nil, nil, fmt.Errorf("nn: optimizer: group %d: %w", i, err)
		}
		params = append(params, g.Params...)
		parts = append(parts, pt)
	}
	return params, parts, nil
}

// groupPart checks a group's settings and returns its part.
func groupPart(g ParamGroup) (optPart, error) {
	if err := checkHyper("weight decay", g.WeightDecay, 0, math.MaxFloat32, false, false); err != nil {
		return optPart{}, err
	}
	scale := g.LRScale
	if scale == 0 {
		scale = 1
	}
	if err := checkHyper("LR scale", scale, 0, math.MaxFloat32, true, false); err != nil {
		return optPart{}, err
	}
	return optPart{n: len(g.Params), weightDecay: g.WeightDecay, lrScale: scale}, nil
}

// Groups returns the optimizer's parameter groups and their settings (one
// group, with the options' weight decay and LR scale 1, for an optimizer
// made without groups). The slices are copies.
func (a *Adam) Groups() []ParamGroup {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.groups(a.o.WeightDecay)
}

// Groups returns the optimizer's parameter groups and their settings, as
// Adam.Groups.
func (s *SGD) Groups() []ParamGroup {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.groups(s.o.WeightDecay)
}

// groups returns the parts as ParamGroups; the caller holds the lock.
func (o *optimizer) groups(base float64) []ParamGroup {
	var gs []ParamGroup
	first := 0
	for _, pt := range o.parts {
		gs = append(gs, ParamGroup{Params: slices.Clone(o.params[first : first+pt.n]), WeightDecay: o.decay(pt, base), LRScale: pt.lrScale})
		first += pt.n
	}
	return gs
}

// groupRecord is a group of an optimizer in a checkpoint's state.json.
type groupRecord struct {
	Params      []string `json:"params"`
	WeightDecay float64  `json:"weight_decay"`
	LRScale     float64  `json:"lr_scale"`
}

// groupRecords returns the groups of a grouped optimizer for a checkpoint,
// nil for one made without groups. The caller holds the lock.
func (o *optimizer) groupRecords() []groupRecord {
	if !o.grouped {
		return nil
	}
	var rs []groupRecord
	first := 0
	for _, pt := range o.parts {
		r := groupRecord{WeightDecay: pt.weightDecay, LRScale: pt.lrScale}
		for _, p := range o.params[first : first+pt.n] {
			r.Params = append(r.Params, p.Name)
		}
		rs = append(rs, r)
		first += pt.n
	}
	return rs
}

// checkGroups checks that groups read from a checkpoint are the
// optimizer's: the same parameters in the same groups, valid settings. The
// caller holds the lock.
func (o *optimizer) checkGroups(rs []groupRecord) error {
	if (rs != nil) != o.grouped {
		if o.grouped {
			return fmt.Errorf("the checkpoint's optimizer was made without groups, the given one with %d", len(o.parts))
		}
		return fmt.Errorf("the checkpoint's optimizer was made with %d groups, the given one without", len(rs))
	}
	if !o.grouped {
		return nil
	}
	if len(rs) != len(o.parts) {
		return fmt.Errorf("the checkpoint's optimizer has %d groups, the given one %d", len(rs), len(o.parts))
	}
	first := 0
	for i, r := range rs {
		pt := o.parts[i]
		names := make([]string, pt.n)
		for j, p := range o.params[first : first+pt.n] {
			names[j] = p.Name
		}
		if !slices.Equal(names, r.Params) {
			return fmt.Errorf("group %d holds %v in the checkpoint, %v in the given optimizer", i, r.Params, names)
		}
		if _, err := groupPart(ParamGroup{Params: o.params[first : first+pt.n], WeightDecay: r.WeightDecay, LRScale: r.LRScale}); err != nil {
			return fmt.Errorf("group %d: %w", i, err)
		}
		first += pt.n
	}
	return nil
}

// setGroups sets the groups' settings from a checkpoint's records, which
// checkGroups accepted. The caller holds the lock.
func (o *optimizer) setGroups(rs []groupRecord) {
	for i, r := range rs {
		pt, _ := groupPart(ParamGroup{WeightDecay: r.WeightDecay, LRScale: r.LRScale})
		o.parts[i].weightDecay, o.parts[i].lrScale = pt.weightDecay, pt.lrScale
	}
}

// syncFrozen leaves the frozen parameters out of the next step. The caller
// holds the lock.
func (o *optimizer) syncFrozen() {
	first := 0
	for _, pt := range o.parts {
		for j, p := range o.params[first : first+pt.n] {
			pt.state.SetFrozen(j, p.Frozen)
			o.used[first+j] = o.used[first+j] || !p.Frozen
		}
		first += pt.n
	}
}
