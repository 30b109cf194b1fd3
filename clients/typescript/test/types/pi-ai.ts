// Type-checked by run-tests.sh (tsc -p test/types), never run: pi's own
// message types must go to appendMessage and its siblings without a cast.
//
// A structural copy of @mariozechner/pi-ai's message types
// (packages/ai/src/types.ts in pi-mono) as pi declares them — interfaces,
// so TypeScript gives them no implicit index signature — since this
// repository has no npm registry to install pi-ai from.
import { SessionLog } from "../../src/index.js";
import type { Session } from "../../src/index.js";

type Api = "anthropic-messages" | "openai-responses" | (string & {});
type Provider = "anthropic" | "openai" | string;

interface TextContent {
  type: "text";
  text: string;
  textSignature?: string;
}
interface ThinkingContent {
  type: "thinking";
  thinking: string;
  thinkingSignature?: string;
}
interface ImageContent {
  type: "image";
  data: string;
  mimeType: string;
}
interface ToolCall {
  type: "toolCall";
  id: string;
  name: string;
  arguments: Record<string, any>;
  thoughtSignature?: string;
}
interface Usage {
  input: number;
  output: number;
  cacheRead: number;
  cacheWrite: number;
  totalTokens: number;
  cost: { input: number; output: number; cacheRead: number; cacheWrite: number; total: number };
}
type StopReason = "stop" | "length" | "toolUse" | "error" | "aborted";

interface UserMessage {
  role: "user";
  content: string | (TextContent | ImageContent)[];
  timestamp: number;
}
interface AssistantMessage {
  role: "assistant";
  content: (TextContent | ThinkingContent | ToolCall)[];
  api: Api;
  provider: Provider;
  model: string;
  usage: Usage;
  stopReason: StopReason;
  errorMessage?: string;
  timestamp: number;
}
interface ToolResultMessage<TDetails = any> {
  role: "toolResult";
  toolCallId: string;
  toolName: string;
  content: (TextContent | ImageContent)[];
  details?: TDetails;
  isError: boolean;
  timestamp: number;
}
type Message = UserMessage | AssistantMessage | ToolResultMessage;

// pi-agent-core's AgentMessage: pi-ai's messages or an app's own (declaration merging).
interface BashExecutionMessage {
  role: "bashExecution";
  command: string;
  output: string;
  exitCode: number | undefined;
  cancelled: boolean;
  truncated: boolean;
  timestamp: number;
}
type AgentMessage = Message | BashExecutionMessage;

declare const u: UserMessage;
declare const a: AssistantMessage;
declare const r: ToolResultMessage<{ lines: number }>;
declare const m: Message;
declare const am: AgentMessage;
declare const history: Message[];
declare const blocks: (TextContent | ImageContent)[];

export async function appendsPiMessages(s: Session): Promise<string[]> {
  const ids: string[] = [];
  ids.push(await s.appendMessage(u));
  ids.push(await s.appendMessage(a));
  ids.push(await s.appendMessage(r));
  ids.push(await s.appendMessage(m));
  ids.push(await s.appendMessage(am));
  ids.push(...(await s.appendMessages([a, r])));
  ids.push(...(await s.appendMessages(history)));
  ids.push(await s.appendCustomMessageEntry("note", blocks, true));
  // Literals still type-check, as the README's examples write them.
  ids.push(await s.appendMessage({ role: "user", content: "q", timestamp: Date.now() }));
  return ids;
}

export function opensWith(log: SessionLog): Promise<Session> {
  return log.open("01a22bdc-6ce8-7741-8406-3ad384bc1b94");
}
