// The TypeScript SDK's OAuth client flow against an MCP URL: discovery (protected resource metadata,
// then the authorization server's), dynamic client registration, authorization with PKCE (the
// test's authorization server approves at once, so its redirect is read instead of a browser),
// the token exchange, then tools/list and a tools/call with the token.
//     node oauth_flow.mjs URL TOOL ARGUMENTS_JSON   -> prints {"tools": [...], "result": {...}}
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { UnauthorizedError } from "@modelcontextprotocol/sdk/client/auth.js";

const [url, tool, args] = process.argv.slice(2);
const redirectUrl = "http://127.0.0.1:9/callback";
const state = { client: undefined, tokens: undefined, verifier: undefined, code: undefined };
const provider = {
  get redirectUrl() {
    return redirectUrl;
  },
  get clientMetadata() {
    return {
      client_name: "toolsearch OAuth test",
      redirect_uris: [redirectUrl],
      grant_types: ["authorization_code", "refresh_token"],
      response_types: ["code"],
      token_endpoint_auth_method: "none",
    };
  },
  clientInformation: () => state.client,
  saveClientInformation: (info) => void (state.client = info),
  tokens: () => state.tokens,
  saveTokens: (tokens) => void (state.tokens = tokens),
  saveCodeVerifier: (verifier) => void (state.verifier = verifier),
  codeVerifier: () => state.verifier,
  async redirectToAuthorization(authorizationUrl) {
    const response = await fetch(authorizationUrl, { redirect: "manual" });
    const location = response.headers.get("location");
    if (!location) throw new Error(`authorization answered HTTP ${response.status} without a redirect`);
    state.code = new URL(location).searchParams.get("code");
  },
};

async function connected() {
  const client = new Client({ name: "toolsearch-oauth-test", version: "1.0.0" });
  const transport = new StreamableHTTPClientTransport(new URL(url), { authProvider: provider });
  try {
    await client.connect(transport);
    return client;
  } catch (error) {
    if (!(error instanceof UnauthorizedError)) throw error;
    await transport.finishAuth(state.code);
    const again = new Client({ name: "toolsearch-oauth-test", version: "1.0.0" });
    await again.connect(new StreamableHTTPClientTransport(new URL(url), { authProvider: provider }));
    return again;
  }
}

const client = await connected();
const tools = (await client.listTools()).tools.map((t) => t.name);
const result = await client.callTool({ name: tool, arguments: JSON.parse(args) });
console.log(JSON.stringify({ tools, result, registered: Boolean(state.client), token: Boolean(state.tokens) }));
await client.close();
