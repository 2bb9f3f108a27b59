// What a run's live stream (topic workflow/<workflow_id>/<execution_id>) adds up to: each LLM step's
// text and tool calls, and the agent's finish. Pure, so the rules are plain to see.

export interface StreamEvent {
  sequence_id: number;
  event_type: string | null;
  data: Record<string, unknown>;
  created_at: string;
}

export interface StreamToolCall {
  id: string;
  name: string;
  input: unknown;
}

/** One LLM step as streamed by its latest call. */
export interface Turn {
  stepKey: string;
  callId: string;
  text: string;
  toolCalls: StreamToolCall[];
  /** Set by agent.llm_finish. */
  finishReason?: string;
  usage?: { input_tokens?: number; output_tokens?: number; total_tokens?: number };
}

export interface StreamState {
  turns: Turn[];
  finish?: { text: string; stopped: string; usage?: Turn["usage"] };
  /** Events that are not an agent's (shown as they are). */
  other: StreamEvent[];
  /** The last sequence applied: a reconnect resumes after it, and repeats are ignored. */
  lastSequence: number;
}

export const emptyStream: StreamState = { turns: [], other: [], lastSequence: 0 };

const str = (v: unknown) => (typeof v === "string" ? v : "");

/**
 * Applies one event. A step's events under a new call_id mean the earlier call was retried or lost
 * (README "Agents, tools and traces"): what it streamed is dropped, so no text shows twice.
 */
export function applyEvent(state: StreamState, e: StreamEvent): StreamState {
  if (e.sequence_id <= state.lastSequence) return state;
  const next = { ...state, lastSequence: e.sequence_id };
  const type = e.event_type ?? "";
  const stepKey = str(e.data.step_key);
  const callId = str(e.data.call_id);
  if (!type.startsWith("agent.") || !stepKey) return { ...next, other: [...state.other, e] };

  if (type === "agent.finish") {
    next.finish = {
      text: str(e.data.text),
      stopped: str(e.data.stopped),
      usage: e.data.usage as Turn["usage"],
    };
  }
  const index = state.turns.findIndex((t) => t.stepKey === stepKey);
  const fresh: Turn = { stepKey, callId, text: "", toolCalls: [] };
  const prior = index >= 0 ? state.turns[index] : undefined;
  const turn: Turn = prior && prior.callId === callId ? { ...prior } : fresh;
  switch (type) {
    case "agent.text_delta":
      turn.text += str(e.data.delta);
      break;
    case "agent.tool_call":
      turn.toolCalls = [
        ...turn.toolCalls,
        { id: str(e.data.tool_call_id), name: str(e.data.tool_name), input: e.data.input },
      ];
      break;
    case "agent.llm_finish":
      turn.finishReason = str(e.data.finish_reason);
      turn.usage = e.data.usage as Turn["usage"];
      break;
  }
  const turns = [...state.turns];
  if (index >= 0) turns[index] = turn;
  else turns.push(turn);
  return { ...next, turns };
}
