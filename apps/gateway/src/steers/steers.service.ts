import { Inject, Injectable, Logger } from '@nestjs/common';
import { SteerlineError, uuidv7, type OnTurnEnd, type Receipt, type SteerUrgency } from '@steerline/contracts';
import { EngineClient } from '../nats/engine.client';
import { ReadModelsClient } from '../nats/read-models.client';
import { ReceiptWaiter, type SettleWait } from './receipt-waiter';
import { steerDropped } from './receipts';

/** How often a long wait also asks the read model (see `settlement`). */
const RECHECK_MS = 2000;

export type SteerTarget = { turnId: string } | { conversationId: string; expectedTurnId?: string };

export interface SteerInput {
  text: string;
  steerId?: string;
  onTurnEnd?: OnTurnEnd;
  ttlMs?: number;
  urgency?: SteerUrgency;
}

/** Submits and reads steers, waiting (bounded) for their settlement when asked to. */
@Injectable()
export class SteersService {
  private readonly log = new Logger('steers');

  constructor(
    @Inject(EngineClient) private readonly engine: EngineClient,
    @Inject(ReadModelsClient) private readonly reads: ReadModelsClient,
    @Inject(ReceiptWaiter) private readonly waiter: ReceiptWaiter,
  ) {}

  async submit(tenantId: string, target: SteerTarget, input: SteerInput, waitSeconds: number, signal?: AbortSignal): Promise<Receipt> {
    // The gateway picks the id when the client does not, so it can listen for
    // the settlement before the engine can produce it.
    const steerId = input.steerId ?? uuidv7();
    const pending = waitSeconds > 0 ? await this.waiter.register({ tenantId, steerId, ...where(target) }) : undefined;
    try {
      const receipt = await this.send(tenantId, target, input, steerId).catch(async (err: unknown) => {
        // Resubmitting a client's steer id after its turn ended: same receipt, no new event (docs/design.md §2.11).
        const settled = input.steerId && 'turnId' in target ? await this.settledAfterTurnEnd(err, tenantId, target.turnId, steerId) : undefined;
        if (settled) return settled;
        throw err;
      });
      this.log.debug('steer answered', { tenantId, turnId: receipt.turnId, steerId, status: receipt.status, position: receipt.position });
      if ('conversationId' in target) this.waiter.remember(tenantId, receipt.turnId, target.conversationId);
      if (receipt.status !== 'queued' || !pending) return receipt;
      return (await this.settlement(pending, tenantId, receipt.turnId, steerId, waitSeconds * 1000, signal)) ?? receipt;
    } finally {
      pending?.cancel();
    }
  }

  async read(tenantId: string, turnId: string, steerId: string, waitSeconds: number, signal?: AbortSignal): Promise<Receipt> {
    if (waitSeconds <= 0) return this.reads.steer(tenantId, turnId, steerId);
    const pending = await this.waiter.register({ tenantId, steerId, turnId });
    try {
      // The read model lags the log: a steer just accepted may not be there
      // yet, so `not_found` is worth waiting on like `queued` is.
      const first = await this.reads.steer(tenantId, turnId, steerId).catch((err: unknown) => {
        if (err instanceof SteerlineError && err.code === 'not_found') return undefined;
        throw err;
      });
      if (first && first.status !== 'queued') return first;
      const settled = await this.settlement(pending, tenantId, turnId, steerId, waitSeconds * 1000, signal);
      if (settled) return settled;
      if (first && signal?.aborted) return first;
      // A settlement published before we registered is only in the read model.
      return await this.reads.steer(tenantId, turnId, steerId);
    } finally {
      pending.cancel();
    }
  }

  /**
   * Waits for the steer's settlement event and, every RECHECK_MS, asks the read
   * model too: an event published while this gateway was reconnecting to NATS
   * never reaches its subscription. Undefined when the wait ends unsettled, or
   * is released early (shutdown, client gone).
   */
  private async settlement(pending: SettleWait, tenantId: string, turnId: string, steerId: string, ms: number, signal?: AbortSignal): Promise<Receipt | undefined> {
    const deadline = Date.now() + ms;
    for (;;) {
      const slice = Math.min(deadline - Date.now(), RECHECK_MS);
      if (slice <= 0) return undefined;
      const started = Date.now();
      const settled = await pending.wait(turnId, slice, signal);
      if (settled) return settled;
      if (Date.now() - started < slice - 5 || Date.now() >= deadline) return undefined;
      const read = await this.reads.steer(tenantId, turnId, steerId).catch(() => undefined);
      if (read && read.status !== 'queued') return read;
    }
  }

  async withdraw(tenantId: string, turnId: string, steerId: string): Promise<Receipt> {
    try {
      return await this.engine.withdraw(turnId, { tenantId, steerId });
    } catch (err) {
      // The turn has ended, so every steer of it is settled: answer from the record.
      const settled = await this.settledAfterTurnEnd(err, tenantId, turnId, steerId);
      if (settled?.status === 'delivered') throw new SteerlineError('already_delivered', 'the model already has this steer', { steerId, step: settled.step });
      if (settled) return settled;
      throw err;
    }
  }

  /** Edits a queued steer; once its turn ended, the steer's real fate answers (already_delivered / steer_dropped). */
  async edit(tenantId: string, turnId: string, steerId: string, text: string): Promise<Receipt> {
    try {
      return await this.engine.editSteer(turnId, { tenantId, steerId, text });
    } catch (err) {
      const settled = await this.settledAfterTurnEnd(err, tenantId, turnId, steerId);
      if (settled?.status === 'delivered') throw new SteerlineError('already_delivered', 'the model already has this steer', { steerId, step: settled.step });
      if (settled) throw steerDropped(settled);
      throw err;
    }
  }

  /**
   * When the turn no longer runs, a steer of it that is settled in the read model.
   * Makes a resubmitted steer id and a late withdraw answer with the steer's real fate.
   */
  private async settledAfterTurnEnd(err: unknown, tenantId: string, turnId: string, steerId: string): Promise<Receipt | undefined> {
    if (!(err instanceof SteerlineError && err.code === 'turn_not_running')) return undefined;
    const receipt = await this.reads.steer(tenantId, turnId, steerId).catch(() => undefined);
    return receipt && receipt.status !== 'queued' ? receipt : undefined;
  }

  private async send(tenantId: string, target: SteerTarget, input: SteerInput, steerId: string): Promise<Receipt> {
    const { text, onTurnEnd, ttlMs, urgency } = input;
    const steer = { tenantId, text, steerId, ...(onTurnEnd && { onTurnEnd }), ...(ttlMs !== undefined && { ttlMs }), ...(urgency && urgency !== 'next_boundary' && { urgency }) };
    try {
      if ('turnId' in target) return await this.engine.steerTurn(target.turnId, steer);
      const { conversationId, expectedTurnId } = target;
      return await this.engine.steerConversation(conversationId, { ...steer, ...(expectedTurnId ? { expectedTurnId } : {}) });
    } catch (err) {
      // Without an answer the steer may or may not have been accepted; its id
      // lets the client read it or resubmit it idempotently (docs/design.md §2.11).
      if (err instanceof SteerlineError && err.code === 'unavailable') {
        throw new SteerlineError('unavailable', `${err.message}; the steer may have been accepted: resubmit it with the same steerId`, { ...err.details, steerId });
      }
      throw err;
    }
  }
}

/** Where a steer's settlement will be appended, as far as the request says. */
function where(target: SteerTarget): { turnId: string } | { conversationId: string } {
  return 'turnId' in target ? { turnId: target.turnId } : { conversationId: target.conversationId };
}
