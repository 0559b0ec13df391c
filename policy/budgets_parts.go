package policy

// A request whose answer came in parts (a stream cut after its client got
// part of the answer, continued on another deployment): each part is
// recorded on its own ledger record, and all of them count within the
// request's one reservation, so that a cut stream cannot spend past a
// budget by the part no reservation held.

// PartRoom is the output bound per choice that the reservation still pays
// for after a part that cost partPico, the rest's input counted again (a
// continuation sends the prompt again): what the rest must be sent with.
// ok is false for a nil reservation, which bounds nothing.
func (r *Reservation) PartRoom(partPico int64) (tokens int64, ok bool) {
	if r == nil {
		return 0, false
	}
	return r.est.tokensFor(r.pico - r.parts - max(partPico, 0)), true
}

// CountPart counts a part recorded on a record of its own within the
// reservation: from now on Settle settles at the cost of the request's
// own record plus its parts'.
func (r *Reservation) CountPart(partPico int64) {
	if r == nil {
		return
	}
	r.b.mu.Lock()
	r.parts += max(partPico, 0)
	r.b.mu.Unlock()
}
