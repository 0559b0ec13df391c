package admin

// keyPerson is the person a runtime key was minted for (at sign-in or
// `caddy modelgate login`) and their groups, one per line, as the key's
// identity charges them (policy's runtime keys); "" for any other key. A
// key's person and groups are fixed when it is minted, so these are whom
// its agent-reported costs were charged to, and taking them back takes
// them off their spend too.
func (a *Handler) keyPerson(keyID string) (person, groups string) {
	if a.Controls == nil {
		return "", ""
	}
	keys, _ := a.Controls.Runtime()
	for _, k := range keys {
		if k.ID == keyID && k.CreatedBy != nil && k.CreatedBy.Type == "oidc" {
			return k.CreatedBy.ID, k.CreatedBy.Groups
		}
	}
	return "", ""
}
