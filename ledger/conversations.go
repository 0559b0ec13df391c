package ledger

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"time"
)

// Conversation is one Conversations API conversation: an ordered list of
// items a key keeps on the gateway and names in Responses requests
// (conversation), which read it as history and append their turn to it.
type Conversation struct {
	ID       string // "conv_…"
	KeyID    string // the key that created it; every lookup is scoped to it
	Created  time.Time
	Metadata json.RawMessage // a JSON object
}

// ConversationStore keeps conversations in the ledger database, beside the
// stored responses, so every gateway instance on it serves them.
type ConversationStore interface {
	// CreateConversation stores c with its first items (each with an id).
	CreateConversation(ctx context.Context, c Conversation, items []json.RawMessage) error
	// The others answer ErrConversationNotFound for an id that is unknown
	// or another key's, and ErrItemNotFound for an unknown item.
	GetConversation(ctx context.Context, keyID, id string) (Conversation, error)
	UpdateConversation(ctx context.Context, keyID, id string, metadata json.RawMessage) (Conversation, error)
	DeleteConversation(ctx context.Context, keyID, id string) error
	// AppendConversationItems adds items after the last one.
	AppendConversationItems(ctx context.Context, keyID, id string, items []json.RawMessage) error
	// ConversationItems is every item, oldest first.
	ConversationItems(ctx context.Context, keyID, id string) ([]json.RawMessage, error)
	ConversationItem(ctx context.Context, keyID, id, itemID string) (json.RawMessage, error)
	DeleteConversationItem(ctx context.Context, keyID, id, itemID string) error
}

// ErrConversationNotFound says there is no such conversation for this key.
const ErrConversationNotFound = lookupError("conversation not found")

// ErrItemNotFound says the conversation holds no such item.
const ErrItemNotFound = lookupError("item not found")

// MaxConversationItems bounds one conversation, so that a runaway agent
// cannot grow one row set without end; the turn that would pass it is
// served but not appended.
const MaxConversationItems = 10000

func (s *sqlStore) CreateConversation(ctx context.Context, c Conversation, items []json.RawMessage) error {
	p := s.d.placeholder
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer func() { _ = tx.Rollback() }()
	if _, err := tx.ExecContext(ctx, `INSERT INTO conversations (id, key_id, created_us, metadata, next_seq)
VALUES (`+p(1)+`, `+p(2)+`, `+p(3)+`, `+p(4)+`, 0)`, c.ID, c.KeyID, c.Created.UnixMicro(), string(c.Metadata)); err != nil {
		return err
	}
	if err := s.appendItems(ctx, tx, c.KeyID, c.ID, items); err != nil {
		return err
	}
	return tx.Commit()
}

// appendItems numbers items after the conversation's last. The UPDATE
// takes the conversation's row lock on PostgreSQL, so two turns appending
// at once queue rather than collide on a number.
func (s *sqlStore) appendItems(ctx context.Context, tx *sql.Tx, keyID, id string, items []json.RawMessage) error {
	p := s.d.placeholder
	res, err := tx.ExecContext(ctx, `UPDATE conversations SET next_seq = next_seq + `+p(1)+` WHERE id = `+p(2)+` AND key_id = `+p(3),
		len(items), id, keyID)
	if err != nil {
		return err
	}
	if n, err := res.RowsAffected(); err != nil || n == 0 {
		if err != nil {
			return err
		}
		return ErrConversationNotFound
	}
	var next int64
	if err := tx.QueryRowContext(ctx, `SELECT next_seq FROM conversations WHERE id = `+p(1), id).Scan(&next); err != nil {
		return err
	}
	if next > MaxConversationItems {
		return fmt.Errorf("conversation %s would hold over %d items", id, MaxConversationItems)
	}
	seq := next - int64(len(items))
	for _, it := range items {
		var head struct {
			ID string `json:"id"`
		}
		if err := json.Unmarshal(it, &head); err != nil {
			return fmt.Errorf("conversation %s: an item is not a JSON object: %w", id, err)
		}
		seq++
		if _, err := tx.ExecContext(ctx, `INSERT INTO conversation_items (conversation_id, seq, item_id, item)
VALUES (`+p(1)+`, `+p(2)+`, `+p(3)+`, `+p(4)+`)`, id, seq, head.ID, string(it)); err != nil {
			return err
		}
	}
	return nil
}

func (s *sqlStore) GetConversation(ctx context.Context, keyID, id string) (Conversation, error) {
	c := Conversation{ID: id, KeyID: keyID}
	var created int64
	var meta string
	if err := s.keyScopedRow(ctx, "conversations", "created_us, metadata", keyID, id, ErrConversationNotFound, &created, &meta); err != nil {
		return c, err
	}
	c.Created, c.Metadata = time.UnixMicro(created).UTC(), json.RawMessage(meta)
	return c, nil
}

func (s *sqlStore) UpdateConversation(ctx context.Context, keyID, id string, metadata json.RawMessage) (Conversation, error) {
	if !StorableText(id) {
		return Conversation{}, ErrConversationNotFound
	}
	res, err := s.db.ExecContext(ctx, `UPDATE conversations SET metadata = `+s.d.placeholder(1)+` WHERE id = `+s.d.placeholder(2)+
		` AND key_id = `+s.d.placeholder(3), string(metadata), id, keyID)
	if err != nil {
		return Conversation{}, err
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return Conversation{}, ErrConversationNotFound
	}
	return s.GetConversation(ctx, keyID, id)
}

func (s *sqlStore) DeleteConversation(ctx context.Context, keyID, id string) error {
	return s.keyScopedDelete(ctx, "conversations", keyID, id, ErrConversationNotFound,
		`DELETE FROM conversation_items WHERE conversation_id = `+s.d.placeholder(1), id)
}

func (s *sqlStore) AppendConversationItems(ctx context.Context, keyID, id string, items []json.RawMessage) error {
	if !StorableText(id) {
		return ErrConversationNotFound
	}
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer func() { _ = tx.Rollback() }()
	if err := s.appendItems(ctx, tx, keyID, id, items); err != nil {
		return err
	}
	return tx.Commit()
}

func (s *sqlStore) ConversationItems(ctx context.Context, keyID, id string) ([]json.RawMessage, error) {
	if _, err := s.GetConversation(ctx, keyID, id); err != nil {
		return nil, err
	}
	rows, err := s.db.QueryContext(ctx, `SELECT item FROM conversation_items WHERE conversation_id = `+s.d.placeholder(1)+` ORDER BY seq`, id)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []json.RawMessage
	for rows.Next() {
		var it string
		if err := rows.Scan(&it); err != nil {
			return nil, err
		}
		out = append(out, json.RawMessage(it))
	}
	return out, rows.Err()
}

func (s *sqlStore) ConversationItem(ctx context.Context, keyID, id, itemID string) (json.RawMessage, error) {
	if _, err := s.GetConversation(ctx, keyID, id); err != nil {
		return nil, err
	}
	if !StorableText(itemID) {
		return nil, ErrItemNotFound
	}
	var it string
	err := s.db.QueryRowContext(ctx, `SELECT item FROM conversation_items WHERE conversation_id = `+s.d.placeholder(1)+
		` AND item_id = `+s.d.placeholder(2)+` ORDER BY seq DESC LIMIT 1`, id, itemID).Scan(&it)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, ErrItemNotFound
	}
	return json.RawMessage(it), err
}

func (s *sqlStore) DeleteConversationItem(ctx context.Context, keyID, id, itemID string) error {
	if _, err := s.GetConversation(ctx, keyID, id); err != nil {
		return err
	}
	if !StorableText(itemID) {
		return ErrItemNotFound
	}
	res, err := s.db.ExecContext(ctx, `DELETE FROM conversation_items WHERE conversation_id = `+s.d.placeholder(1)+
		` AND item_id = `+s.d.placeholder(2), id, itemID)
	if err != nil {
		return err
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return ErrItemNotFound
	}
	return nil
}

var _ ConversationStore = (*sqlStore)(nil)
