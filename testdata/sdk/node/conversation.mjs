// Asks ragfuse's OpenAI-compatible front door, as a new user would with
// the OpenAI Node SDK: list the models, then a three-message conversation,
// plain and streamed. Prints one JSON object for the Go test to check.
// Environment: RAGFUSE_BASE_URL (".../v1"), RAGFUSE_API_KEY.
import OpenAI from "openai";

const client = new OpenAI({
  baseURL: process.env.RAGFUSE_BASE_URL,
  apiKey: process.env.RAGFUSE_API_KEY,
  maxRetries: 0,
  timeout: 20000,
});

const models = [];
for await (const m of client.models.list()) {
  models.push(m.id);
}

const messages = [
  { role: "system", content: "You are a helpful assistant." },
  { role: "user", content: process.env.RAGFUSE_FIRST },
  { role: "assistant", content: process.env.RAGFUSE_REPLY },
  { role: "user", content: process.env.RAGFUSE_FOLLOW_UP },
];

const { data: plain, response } = await client.chat.completions
  .create({ model: models[0], messages })
  .withResponse();

let streamed = "";
const stream = await client.chat.completions.create({ model: models[0], messages, stream: true });
for await (const chunk of stream) {
  streamed += chunk.choices[0]?.delta?.content ?? "";
}

let refused = null;
try {
  await client.chat.completions.create({
    model: models[0],
    messages: [...messages, { role: "tool", content: "42", tool_call_id: "call_1" }],
  });
} catch (err) {
  refused = { status: err.status, code: err.code ?? err.error?.code ?? null };
}

console.log(JSON.stringify({
  models,
  content: plain.choices[0].message.content,
  source: response.headers.get("x-ragfuse-source"),
  docs: (plain.ragfuse?.docs ?? []).map((d) => d.id),
  streamed,
  refused,
}));
