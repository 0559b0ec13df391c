package caddymodule

import (
	"encoding/json"
	"fmt"

	"github.com/spf13/cobra"
)

// resumeCommand is `caddy modelgate resume <session> [--api-key-id ID]`:
// a session the loop breaker paused goes on (a stopped one too, with the
// admin key).
func resumeCommand() *cobra.Command {
	var keyID string
	c := &cobra.Command{Use: "resume <session>", Short: "Lets an agent session the loop breaker paused or stopped go on", Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			cl, err := adminClient(cmd)
			if err != nil {
				return err
			}
			ctx, cancel := cliContext()
			defer cancel()
			r, err := cl.Resume(ctx, args[0], keyID)
			if err != nil {
				return err
			}
			if asJSON, _ := cmd.Flags().GetBool("json"); asJSON {
				return json.NewEncoder(cmd.OutOrStdout()).Encode(r)
			}
			_, err = fmt.Fprintf(cmd.OutOrStdout(), "Session %s of key %s was %s; its next request goes through.\n", r.SessionID, r.APIKeyID, r.Was)
			return err
		}}
	c.Flags().StringVar(&keyID, "api-key-id", "", "The key whose session it is (default: the calling key's)")
	return c
}
