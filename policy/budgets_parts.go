package policy

// A request whose answer came in parts (a stream cut after its client got
// part of the answer, continued on another deployment): each part is
// recorded on its own ledger record, and all of them count within the
// request's one reservation, so that a cut stream cannot spend past a
// budget by the part no reservation held. A part is carved out of the
// reservation as a settled request of its own (its ticket, its share of
// the lease): counted here until its record is written, then from the
// database only, never twice, whenever the rest's record is written.

// PartRoom is the output bound per choice that the reservation still pays
// for after a part that cost partPico, the rest's input counted again (a
// continuation sends the prompt again): what the rest must be sent with.
// ok is false for a nil reservation, which bounds nothing.
func (r *Reservation) PartRoom(partPico int64) (tokens int64, ok bool) {
	if r == nil {
		return 0, false
	}
	return r.est.tokensFor(r.pico - max(partPico, 0)), true
}

// Part is what a part's own ledger record carries so that its insert
// and the writer's report of it settle it (ledger.Record's Ticket, Lease
// and LeasePico).
type Part struct {
	Ticket, Lease uint64
	LeasePico     int64
}

// CountPart settles a part of the request that cost partPico, recorded
// on a record of its own: the part leaves the reservation (and its draw
// on the lease) and is counted as a settled cost until the ledger writer
// reports its record, whose insert adds it to the spend and takes its
// share off the lease's rows. The request's own record settles the rest.
func (r *Reservation) CountPart(partPico int64) Part {
	if r == nil {
		return Part{}
	}
	partPico = max(partPico, 0)
	b := r.b
	p := Part{Ticket: b.tickets.Add(1)}
	b.mu.Lock()
	defer b.mu.Unlock()
	if !r.done {
		// What the part takes of the estimate is no longer reserved.
		moved := min(partPico, r.pico)
		r.pico -= moved
		for _, k := range r.keys {
			if b.reserved[k] -= moved; b.reserved[k] <= 0 {
				delete(b.reserved, k)
			}
		}
		if d, ok := b.leases.draws[r.ticket]; ok && r.lease != nil {
			share := min(moved, d.pico)
			d.pico -= share
			b.leases.draws[r.ticket] = d
			r.leasePico -= share
			b.leases.draws[p.Ticket] = leaseDraw{t: d.t, pico: share, at: b.now()}
			p.Lease, p.LeasePico = d.t.ticket, share
		}
	}
	if partPico > 0 {
		l := &localSpend{keys: r.keys, pico: partPico, at: b.now(), ticket: p.Ticket}
		b.local = append(b.local, l)
		b.addLocal(l, 1)
		b.unwritten[p.Ticket] = l
	}
	return p
}
