package proxy

// A route says what the relay does with one JSON-RPC method.
type route int

const (
	routeUnknown     route = iota // never forwarded: method.unknown
	routeForward                  // relayed as is
	routeFeature                  // relayed only if the server's expose list names the feature
	routeToolsList                // relayed, response filtered to listable tools
	routeToolsCall                // through the gate
	routeInitialize               // the relay's own handshake with the server (initialize.go)
	routeInitialized              // dropped: the relay sends its own
	routeCancel                   // request id rewritten, relayed
	routeLocal                    // answered by the proxy itself (server-to-client ping)
)

type methodInfo struct {
	route   route
	feature string // for routeFeature
}

// clientMethods are the methods an agent may send, by MCP 2025-11-25.
// server/discover (the stateless 2026-07-28 handshake) is not among them:
// clients fall back to initialize.
var clientMethods = map[string]methodInfo{
	"initialize":                       {route: routeInitialize},
	"ping":                             {route: routeForward},
	"notifications/initialized":        {route: routeInitialized},
	"notifications/cancelled":          {route: routeCancel},
	"tools/list":                       {route: routeToolsList},
	"tools/call":                       {route: routeToolsCall},
	"resources/list":                   {route: routeFeature, feature: "resources"},
	"resources/templates/list":         {route: routeFeature, feature: "resources"},
	"resources/read":                   {route: routeFeature, feature: "resources"},
	"resources/subscribe":              {route: routeFeature, feature: "resources"},
	"resources/unsubscribe":            {route: routeFeature, feature: "resources"},
	"prompts/list":                     {route: routeFeature, feature: "prompts"},
	"prompts/get":                      {route: routeFeature, feature: "prompts"},
	"completion/complete":              {route: routeFeature, feature: "completions"},
	"logging/setLevel":                 {route: routeFeature, feature: "logging"},
	"notifications/roots/list_changed": {route: routeFeature, feature: "roots"},
}

// serverMethods are the methods a server may send to the agent.
var serverMethods = map[string]methodInfo{
	"ping":                                 {route: routeLocal},
	"notifications/cancelled":              {route: routeCancel},
	"notifications/progress":               {route: routeForward},
	"notifications/tools/list_changed":     {route: routeToolsList},
	"notifications/message":                {route: routeFeature, feature: "logging"},
	"notifications/resources/updated":      {route: routeFeature, feature: "resources"},
	"notifications/resources/list_changed": {route: routeFeature, feature: "resources"},
	"notifications/prompts/list_changed":   {route: routeFeature, feature: "prompts"},
	"sampling/createMessage":               {route: routeFeature, feature: "sampling"},
	"elicitation/create":                   {route: routeFeature, feature: "elicitation"},
	"roots/list":                           {route: routeFeature, feature: "roots"},
}

// capabilityFeatures maps the members of the server's capabilities object
// to the feature that must be exposed for the proxy to advertise them.
// "tools" is always relayed; anything not listed (experimental, …) is
// dropped.
var serverCapabilities = map[string]string{
	"tools":       "",
	"resources":   "resources",
	"prompts":     "prompts",
	"completions": "completions",
	"logging":     "logging",
}

// clientCapabilities is the same for the agent's capabilities object.
var clientCapabilities = map[string]string{
	"roots":       "roots",
	"sampling":    "sampling",
	"elicitation": "elicitation",
}
