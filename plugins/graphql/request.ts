/**
 * A GraphQL request's answer, and a request prepared for a transport other than POST (Note
 * [Requests over other transports] in ./engine.ts): the types the engine and the transports and
 * live queries share, apart from the engine so that they import no cycle.
 */
import type { BuildResult, OperationKind, RunContext } from '../../core/plugin.js';
import type { RootFields } from './prepare.js';

export interface Answer {
  /** The response's JSON text (decoded from `parts` when first read, where it came as bytes). */
  readonly text: string;
  /** The response's UTF-8 bytes in parts, where a field's JSON came as bytes (Note [Answers as
   * bytes] in core/schema/contract.ts): what POST sends, the fields' bytes as they came (written
   * one after the other, never copied into one buffer where Node's response takes them), never
   * decoded unless `text` is read. */
  readonly parts?: readonly Uint8Array[];
  /** 200, or 500 for an unexpected failure of a single (not batched) request. */
  status: number;
  /** Headers the fields added to the HTTP response (RunContext.responseHeaders). */
  headers?: readonly [string, string][];
}

/*
 * Note [Requests over other transports]
 * The WebSocket protocols (plugins/graphql-ws) send requests one by one and need to know what a
 * request is before running it: a query or mutation is answered once, a subscription is handed
 * to the live queries (./live.ts), and errors found before running (parse, validation, variables,
 * planning) are reported differently from errors of running (the protocols' `error` and `data`
 * messages). `prepareRequest` does the first half of the POST path (the same plan cache, whose
 * entries for such transports are kept apart only because they accept subscriptions) and leaves
 * the running to the caller.
 */

/** A request prepared for a transport other than POST (Note [Requests over other transports]). */
export interface PreparedRequest {
  readonly kind: OperationKind;
  readonly fields: RootFields;
  /** What the plans run with: the session, the coerced variables, the headers. */
  readonly ctx: RunContext;
  /** The build it was planned on: a subscription is planned again once it is not the current one. */
  readonly build: BuildResult;
  /** Runs a query or mutation: the response's text, as POST answers it (errors included). */
  run(): Promise<Answer>;
}
