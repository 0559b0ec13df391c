// Package modellist loads the YAML model_list: the aliases clients send as
// "model", the deployments behind each alias, router settings and the
// model_aliases map. Every rule of the "models YAML" contract is enforced at
// load time, so a bad file stops Caddy at startup with a message naming the
// file and line, the entry (index and model_name), the field and the fix,
// instead of failing on the first request. All errors of a file are
// reported together (errors.Join, one per line).
//
// Secrets (api_key, extra_headers values, anything read through
// os.environ/NAME, an api_base from the environment) never appear in
// errors, warnings or String output.
//
// # File format
//
// Top level: model_list (required, non-empty), router_settings,
// model_aliases. Keys starting with "x-" are ignored, as in docker-compose,
// to give YAML anchors a home; merge keys (<<: *defaults) work everywhere a
// mapping is read, explicit keys winning.
//
// Per entry: model_name, proxy_params, model_info, secrets (the secret
// firewall's action: redact, block, log or off). proxy_params.model is
// <provider>/<upstream model>; the provider prefix picks the backend:
//
//	ollama, ollama_chat           Ollama native API; api_base (server root) required, api_key optional
//	openai + api_base             chat-completions server you run; api_key required, any value
//	hosted_vllm, lm_studio,
//	llamacpp                      the same, api_base required
//	openai, anthropic, groq, mistral, deepseek, openrouter, together_ai,
//	fireworks_ai, xai, gemini     cloud APIs; api_base defaults to the provider's
//	                              endpoint (overriding it keeps the entry "cloud"),
//	                              api_key required
//	echo                          built in; no api_base, no api_key
//	bedrock                       Claude on AWS Bedrock; aws_region_name (or
//	                              AWS_REGION), aws_access_key_id with
//	                              aws_secret_access_key (and aws_session_token)
//	                              or none of them for the AWS chain; no api_key
//	vertex_ai                     Claude on Vertex AI; vertex_credentials (a
//	                              service-account JSON file, read and checked at
//	                              load), vertex_location, vertex_project (default:
//	                              the file's project_id); no api_key
//
// For bedrock and vertex_ai, api_base replaces the service endpoint (a VPC
// or private endpoint); the aws_ and vertex_ fields are refused on other
// providers' entries.
//
// os.environ/NAME is resolved in api_key, api_base, extra_headers values and
// the aws_ and vertex_ fields; an unset or empty variable is an error.
//
// tls_ca_file, tls_client_cert and tls_client_key (PEM files; relative
// paths are the models file's directory's) reach an https upstream behind
// a private CA or one that wants a client certificate; they are loaded and
// checked at load: cert and key go together, an https api_base is needed.
// Prices above $0.001 per token are refused (a per-million price in the
// per-token field).
//
// Times (timeout, stream_timeout, cooldown_time) are seconds (30, 1.5) or Go
// durations ("30s", "2m"). Zero is refused for timeouts (remove the field
// instead); cooldown_time: 0 disables cooldown. Prices are USD per token and
// are held exactly, in picodollars.
//
// router_settings.fallbacks is a list of one-key maps, "- primary: [backup1,
// backup2]"; every name must be a model_name, no alias may fall back to
// itself or be listed twice. model_aliases maps client model names to
// aliases, with keys either exact or a prefix ending in '*'; a model_name
// always wins, then an exact key, then the longest prefix.
//
// Warnings, not errors, flag an api_base that contradicts its kind: an
// ollama base ending in /v1 or /api/chat, an OpenAI-compatible base with no
// version segment (/v1) or ending in /chat/completions, an anthropic base
// ending in /v1, and a cloud api_key that looks like a placeholder.
package modellist
