// A stateless MCP server written with the TypeScript SDK's low-level Server, as others write them:
// each POST gets a fresh Server and a stateless streamable HTTP transport. Its one tool asks the
// client for sampling in the middle of the call, on the call's SSE stream; a client's answer comes
// back in a new POST, which reaches a new Server that holds no such request, so the tool never hears
// a refusal and waits for the SDK's request timeout.
//     PORT=8000 node asking_server.mjs     -> MCP endpoint http://127.0.0.1:8000/mcp
import http from "node:http";
import { Server } from "@modelcontextprotocol/sdk/server/index.js";
import { StreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/streamableHttp.js";
import {
  CallToolRequestSchema,
  CreateMessageResultSchema,
  ListToolsRequestSchema,
} from "@modelcontextprotocol/sdk/types.js";

const SUMMARIZE = {
  name: "summarize_text",
  description: "Summarize a text with the client's model (asks the client for sampling).",
  inputSchema: { type: "object", properties: { text: { type: "string" } }, required: ["text"] },
  annotations: { readOnlyHint: true },
};

function askingServer() {
  const server = new Server({ name: "asking-upstream", version: "1.0.0" }, { capabilities: { tools: {} } });
  server.setRequestHandler(ListToolsRequestSchema, async () => ({ tools: [SUMMARIZE] }));
  server.setRequestHandler(CallToolRequestSchema, async (request, extra) => {
    const sampled = await extra.sendRequest(
      {
        method: "sampling/createMessage",
        params: {
          messages: [{ role: "user", content: { type: "text", text: `Summarize: ${request.params.arguments.text}` } }],
          maxTokens: 100,
        },
      },
      CreateMessageResultSchema,
    );
    return { content: [{ type: "text", text: sampled.content.text ?? "" }] };
  });
  return server;
}

http
  .createServer(async (req, res) => {
    if (req.method !== "POST" || req.url !== "/mcp") {
      res.writeHead(req.method === "POST" ? 404 : 405).end();
      return;
    }
    const server = askingServer();
    const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined });
    res.on("close", () => {
      transport.close();
      server.close();
    });
    await server.connect(transport);
    await transport.handleRequest(req, res);
  })
  .listen(Number(process.env.PORT), "127.0.0.1");
