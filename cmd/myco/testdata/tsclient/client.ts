// A TypeScript client's use of the types openapi-typescript generates from myco's served
// OpenAPI document (./schema.d.ts, written by the test that compiles this with tsc
// --strict): each event narrows to its own type by its type field, an action is one of
// the actions with the fields each takes, and what an operation takes and answers is
// typed. The lines marked @ts-expect-error must not compile.
import type { components, paths } from "./schema";

type Event = components["schemas"]["Event"];
type Action = components["schemas"]["Action"];

// describe tells an event in words; every member of Event has its own fields.
export function describe(ev: Event): string {
  switch (ev.type) {
    case "text_delta":
      return ev.text ?? "";
    case "tool_finished":
      return `${ev.tool ?? "?"} took ${ev.duration_secs ?? 0} s, exit ${ev.exit_code ?? "none"}`;
    case "state":
      return ev.busy ? `busy with ${ev.job ?? "?"} ${ev.job_id ?? ""}` : "idle";
    case "child_created":
      return `child ${ev.child_session ?? "?"}`;
    case "error":
    case "cancelled":
      return `${ev.code ?? ""}: ${ev.error ?? ""}`;
    case "step":
      return `${ev.usage.input} in, ${ev.usage.output} out`;
    default:
      return ev.type;
  }
}

// @ts-expect-error: a text delta has no busy field.
export const wrong = (ev: components["schemas"]["TextDeltaEvent"]) => ev.busy;

export const submit: Action = { request_id: "r1", action: "submit", text: "Run the tests.", wait: true };
export const rename: Action = { request_id: "r2", action: "set_title", title: "Fix the build" };
// @ts-expect-error: select_model needs its model.
export const noModel: Action = { request_id: "r3", action: "select_model" };

type ActBody = paths["/sessions/{id}/actions"]["post"]["requestBody"]["content"]["application/json"];
type ActAnswer = paths["/sessions/{id}/actions"]["post"]["responses"]["200"]["content"]["application/json"];
export const body: ActBody = submit;

// cursor is where a stream opened after an action's answer starts.
export function cursor(a: ActAnswer): string | undefined {
  return a.action === "submit" ? a.event_id : undefined;
}

type Streamed = paths["/events"]["get"]["responses"]["200"]["content"]["text/event-stream"];
export const event: Streamed = { type: "state", busy: false, session: "s1", seq: 7 };
