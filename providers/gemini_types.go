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
}

type geminiBlob struct {
	MimeType string `json:"mimeType"`
	Data     string `json:"data"`
}

type geminiFileData struct {
	MimeType string `json:"mimeType,omitempty"`
	FileURI  string `json:"fileUri"`
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
}

type geminiFunctionDecl struct {
	Name                 string          `json:"name"`
	Description          string          `json:"description,omitempty"`
	Parameters           json.RawMessage `json:"parameters,omitempty"`
	ParametersJSONSchema json.RawMessage `json:"parametersJsonSchema,omitempty"`
}

type geminiToolConfig struct {
	FunctionCallingConfig *struct {
		Mode                 string   `json:"mode"`
		AllowedFunctionNames []string `json:"allowedFunctionNames"`
	} `json:"functionCallingConfig"`
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
	ThinkingConfig     *struct {
		IncludeThoughts bool   `json:"includeThoughts"`
		ThinkingBudget  *int64 `json:"thinkingBudget"`
		ThinkingLevel   string `json:"thinkingLevel"`
	} `json:"thinkingConfig,omitempty"`
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
