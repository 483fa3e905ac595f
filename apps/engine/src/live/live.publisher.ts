import type { NatsConnection } from '@nats-io/transport-node';
import { type LiveMessage, type Subjects } from '@steerline/contracts';
import { encodeJson } from '@steerline/runtime';

/** What a running call reports while it works; never stored, so never awaited. */
export interface ToolProgressReport {
  progress?: number;
  message?: string;
}

/** One turn's live output: fire-and-forget core NATS publishes (docs/design.md §11). */
export interface TurnLive {
  /** The delta sink of one model request: indexes are gapless from 0 per call. */
  deltas(step: number): (text: string) => void;
  progress(step: number, toolCallId: string): (report: ToolProgressReport) => void;
}

export class LivePublisher {
  constructor(
    private readonly nc: NatsConnection,
    private readonly s: Subjects,
  ) {}

  forTurn(tenantId: string, conversationId: string, turnId: string): TurnLive {
    const subject = this.s.conversationLive(tenantId, conversationId);
    const send = (msg: LiveMessage) => {
      // A live message lost to a disconnect is acceptable: the stored event carries the fact.
      if (!this.nc.isClosed()) this.nc.publish(subject, encodeJson(msg));
    };
    return {
      deltas(step) {
        let index = 0;
        return (text) => {
          if (text !== '') send({ type: 'ModelDelta', turnId, step, index: index++, text });
        };
      },
      progress(step, toolCallId) {
        return ({ progress, message }) => {
          const p = progress === undefined || !Number.isFinite(progress) ? undefined : Math.min(1, Math.max(0, progress));
          send({ type: 'ToolProgress', turnId, step, toolCallId, ...(p === undefined ? {} : { progress: p }), ...(message ? { message: message.slice(0, 1_000) } : {}) });
        };
      },
    };
  }
}
