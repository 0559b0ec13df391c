package providers

import "encoding/json"

// The Gemini API (generativelanguage v1beta) wire types, as Gemini CLI
// and the google-genai SDKs send and read them.
// lowerCamelCase keys, UPPER_CASE enums.

type geminiRequest struct {
	Contents          []geminiContent   `json:"contents"`
	SystemInstruction *geminiContent    `json:"systemInstruction,omitempty"`
	Tools             []geminiTool      `json:"tools,omitempty"`
	ToolConfig        *geminiToolConfig `json:"toolConfig,omitempty"`
	GenerationConfig  *geminiGenConfig  `json:"generationConfig,omitempty"`
	SafetySettings    json.RawMessage   `json:"safetySettings,omitempty"`
	CachedContent     string            `json:"cachedContent,omitempty"`
	ServiceTier       string            `json:"serviceTier,omitempty"`
	// countTokens may wrap the request.
	GenerateContentRequest *geminiRequest `json:"generateContentRequest,omitempty"`
	Model                  string         `json:"model,omitempty"`
	// The proto field names, which Google's parser reads as well as the
	// JSON names (geminiRequest.unify folds them in); a pointer, allocated
	// only when a request names one.
	*GeminiRequestProtoNames
}

// GeminiRequestProtoNames is a Gemini request's members under their proto
// field names (exported only because encoding/json allocates an embedded
// pointer to an exported struct alone).
type GeminiRequestProtoNames struct {
	SystemInstructionSnake      *geminiContent    `json:"system_instruction,omitempty"`
	ToolConfigSnake             *geminiToolConfig `json:"tool_config,omitempty"`
	GenerationConfigSnake       *geminiGenConfig  `json:"generation_config,omitempty"`
	SafetySettingsSnake         json.RawMessage   `json:"safety_settings,omitempty"`
	CachedContentSnake          string            `json:"cached_content,omitempty"`
	ServiceTierSnake            string            `json:"service_tier,omitempty"`
	GenerateContentRequestSnake *geminiRequest    `json:"generate_content_request,omitempty"`
}

type geminiContent struct {
	Role  string       `json:"role,omitempty"`
	Parts []geminiPart `json:"parts"`
}

type geminiPart struct {
	Text                string                `json:"text,omitempty"`
	Thought             bool                  `json:"thought,omitempty"`
	ThoughtSignature    string                `json:"thoughtSignature,omitempty"`
	InlineData          *geminiBlob           `json:"inlineData,omitempty"`
	FileData            *geminiFileData       `json:"fileData,omitempty"`
	FunctionCall        *geminiFunctionCall   `json:"functionCall,omitempty"`
	FunctionResponse    *geminiFunctionResult `json:"functionResponse,omitempty"`
	ExecutableCode      json.RawMessage       `json:"executableCode,omitempty"`
	CodeExecutionResult json.RawMessage       `json:"codeExecutionResult,omitempty"`
	// A pointer: parts are many, and the proto names rare (encoding/json
	// allocates it when one is sent).
	*GeminiPartProtoNames
}

// GeminiPartProtoNames is a Gemini part's members under their proto field
// names. It is exported only because encoding/json allocates an embedded
// pointer to an exported struct alone; the gateway reads it nowhere else.
type GeminiPartProtoNames struct {
	ThoughtSignatureSnake    string                `json:"thought_signature,omitempty"`
	InlineDataSnake          *geminiBlob           `json:"inline_data,omitempty"`
	FileDataSnake            *geminiFileData       `json:"file_data,omitempty"`
	FunctionCallSnake        *geminiFunctionCall   `json:"function_call,omitempty"`
	FunctionResponseSnake    *geminiFunctionResult `json:"function_response,omitempty"`
	ExecutableCodeSnake      json.RawMessage       `json:"executable_code,omitempty"`
	CodeExecutionResultSnake json.RawMessage       `json:"code_execution_result,omitempty"`
}

type geminiBlob struct {
	MimeType      string `json:"mimeType"`
	Data          string `json:"data"`
	MimeTypeSnake string `json:"mime_type,omitempty"`
}

type geminiFileData struct {
	MimeType      string `json:"mimeType,omitempty"`
	FileURI       string `json:"fileUri"`
	MimeTypeSnake string `json:"mime_type,omitempty"`
	FileURISnake  string `json:"file_uri,omitempty"`
}

type geminiFunctionCall struct {
	ID   string          `json:"id,omitempty"`
	Name string          `json:"name"`
	Args json.RawMessage `json:"args"`
}

type geminiFunctionResult struct {
	ID       string          `json:"id,omitempty"`
	Name     string          `json:"name"`
	Response json.RawMessage `json:"response"`
	Parts    []geminiPart    `json:"parts,omitempty"`
}

type geminiTool struct {
	FunctionDeclarations  []geminiFunctionDecl `json:"functionDeclarations,omitempty"`
	GoogleSearch          json.RawMessage      `json:"googleSearch,omitempty"`
	CodeExecution         json.RawMessage      `json:"codeExecution,omitempty"`
	URLContext            json.RawMessage      `json:"urlContext,omitempty"`
	GoogleMaps            json.RawMessage      `json:"googleMaps,omitempty"`
	FileSearch            json.RawMessage      `json:"fileSearch,omitempty"`
	GoogleSearchRetrieval json.RawMessage      `json:"googleSearchRetrieval,omitempty"`

	FunctionDeclarationsSnake  []geminiFunctionDecl `json:"function_declarations,omitempty"`
	GoogleSearchSnake          json.RawMessage      `json:"google_search,omitempty"`
	CodeExecutionSnake         json.RawMessage      `json:"code_execution,omitempty"`
	URLContextSnake            json.RawMessage      `json:"url_context,omitempty"`
	GoogleMapsSnake            json.RawMessage      `json:"google_maps,omitempty"`
	FileSearchSnake            json.RawMessage      `json:"file_search,omitempty"`
	GoogleSearchRetrievalSnake json.RawMessage      `json:"google_search_retrieval,omitempty"`
}

type geminiFunctionDecl struct {
	Name                 string          `json:"name"`
	Description          string          `json:"description,omitempty"`
	Parameters           json.RawMessage `json:"parameters,omitempty"`
	ParametersJSONSchema json.RawMessage `json:"parametersJsonSchema,omitempty"`

	ParametersJSONSchemaSnake json.RawMessage `json:"parameters_json_schema,omitempty"`
}

type geminiToolConfig struct {
	FunctionCallingConfig      *geminiFunctionCalling `json:"functionCallingConfig"`
	FunctionCallingConfigSnake *geminiFunctionCalling `json:"function_calling_config,omitempty"`
}

type geminiFunctionCalling struct {
	Mode                      string   `json:"mode"`
	AllowedFunctionNames      []string `json:"allowedFunctionNames"`
	AllowedFunctionNamesSnake []string `json:"allowed_function_names,omitempty"`
}

type geminiGenConfig struct {
	Temperature        *float64        `json:"temperature,omitempty"`
	TopP               *float64        `json:"topP,omitempty"`
	TopK               *float64        `json:"topK,omitempty"`
	MaxOutputTokens    *int64          `json:"maxOutputTokens,omitempty"`
	StopSequences      []string        `json:"stopSequences,omitempty"`
	CandidateCount     *int64          `json:"candidateCount,omitempty"`
	PresencePenalty    *float64        `json:"presencePenalty,omitempty"`
	FrequencyPenalty   *float64        `json:"frequencyPenalty,omitempty"`
	Seed               *int64          `json:"seed,omitempty"`
	ResponseMimeType   string          `json:"responseMimeType,omitempty"`
	ResponseSchema     json.RawMessage `json:"responseSchema,omitempty"`
	ResponseJSONSchema json.RawMessage `json:"responseJsonSchema,omitempty"`
	ThinkingConfig     *geminiThinking `json:"thinkingConfig,omitempty"`
	*GeminiGenConfigProtoNames
}

// GeminiGenConfigProtoNames is a generation config's members under their
// proto field names (exported as GeminiRequestProtoNames is).
type GeminiGenConfigProtoNames struct {
	TopPSnake               *float64        `json:"top_p,omitempty"`
	TopKSnake               *float64        `json:"top_k,omitempty"`
	MaxOutputTokensSnake    *int64          `json:"max_output_tokens,omitempty"`
	StopSequencesSnake      []string        `json:"stop_sequences,omitempty"`
	CandidateCountSnake     *int64          `json:"candidate_count,omitempty"`
	PresencePenaltySnake    *float64        `json:"presence_penalty,omitempty"`
	FrequencyPenaltySnake   *float64        `json:"frequency_penalty,omitempty"`
	ResponseMimeTypeSnake   string          `json:"response_mime_type,omitempty"`
	ResponseSchemaSnake     json.RawMessage `json:"response_schema,omitempty"`
	ResponseJSONSchemaSnake json.RawMessage `json:"response_json_schema,omitempty"`
	ThinkingConfigSnake     *geminiThinking `json:"thinking_config,omitempty"`
}

type geminiThinking struct {
	IncludeThoughts bool   `json:"includeThoughts"`
	ThinkingBudget  *int64 `json:"thinkingBudget"`
	ThinkingLevel   string `json:"thinkingLevel"`

	IncludeThoughtsSnake bool   `json:"include_thoughts,omitempty"`
	ThinkingBudgetSnake  *int64 `json:"thinking_budget,omitempty"`
	ThinkingLevelSnake   string `json:"thinking_level,omitempty"`
}

// geminiResponse is a GenerateContentResponse, whole or one stream chunk.
type geminiResponse struct {
	Candidates    []geminiCandidate `json:"candidates,omitempty"`
	UsageMetadata *geminiUsage      `json:"usageMetadata,omitempty"`
	ModelVersion  string            `json:"modelVersion"`
	ResponseID    string            `json:"responseId"`
}

type geminiCandidate struct {
	Content      *geminiContent `json:"content,omitempty"`
	FinishReason string         `json:"finishReason,omitempty"`
	Index        int            `json:"index"`
}

type geminiUsage struct {
	PromptTokenCount        int64 `json:"promptTokenCount,omitempty"`
	CachedContentTokenCount int64 `json:"cachedContentTokenCount,omitempty"`
	CandidatesTokenCount    int64 `json:"candidatesTokenCount,omitempty"`
	ThoughtsTokenCount      int64 `json:"thoughtsTokenCount,omitempty"`
	TotalTokenCount         int64 `json:"totalTokenCount,omitempty"`
}

// geminiModel is one entry of GET /v1beta/models.
type geminiModel struct {
	Name                       string   `json:"name"`
	BaseModelID                string   `json:"baseModelId"`
	Version                    string   `json:"version"`
	DisplayName                string   `json:"displayName"`
	InputTokenLimit            int64    `json:"inputTokenLimit"`
	OutputTokenLimit           int64    `json:"outputTokenLimit"`
	SupportedGenerationMethods []string `json:"supportedGenerationMethods"`
}

// GeminiModel is the Model object for an alias; embeds says whether its
// deployments serve embeddings, which SDKs find by the methods listed.
func GeminiModel(alias string, embeds bool) []byte {
	b, _ := json.Marshal(geminiModelOf(alias, embeds))
	return b
}

var (
	generateMethods = []string{"generateContent", "streamGenerateContent", "countTokens"}
	allMethods      = []string{"generateContent", "streamGenerateContent", "countTokens", "embedContent", "batchEmbedContents"}
)

func geminiModelOf(alias string, embeds bool) geminiModel {
	methods := generateMethods
	if embeds {
		methods = allMethods
	}
	return geminiModel{Name: "models/" + alias, BaseModelID: alias, Version: "001", DisplayName: alias,
		InputTokenLimit: 1048576, OutputTokenLimit: 65536, SupportedGenerationMethods: methods}
}

// GeminiModels is the models list for aliases, one page.
func GeminiModels(aliases []string, embeds func(alias string) bool, nextPageToken string) []byte {
	out := struct {
		Models        []geminiModel `json:"models"`
		NextPageToken string        `json:"nextPageToken,omitempty"`
	}{Models: []geminiModel{}, NextPageToken: nextPageToken}
	for _, a := range aliases {
		out.Models = append(out.Models, geminiModelOf(a, embeds(a)))
	}
	b, _ := json.Marshal(out)
	return b
}
