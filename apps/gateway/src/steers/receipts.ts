import { SteerlineError, type Receipt, type SteerlineEvent } from '@steerline/contracts';
import type { HttpResponse } from '../http/http.types';

/** The receipt a settlement event stands for; undefined for any other event. */
export function settlementReceipt(event: SteerlineEvent): Receipt | undefined {
  switch (event.type) {
    case 'SteeringDelivered': {
      const { steerId, position, text, step, boundary, requestStep } = event.data;
      return { steerId, turnId: event.turnId, status: 'delivered', position, text, step, boundary, requestStep };
    }
    case 'SteerDropped': {
      const { steerId, position, text, reason, nextTurnId } = event.data;
      return { steerId, turnId: event.turnId, status: 'dropped', position, text, reason, ...(nextTurnId && { nextTurnId }) };
    }
    default:
      return undefined;
  }
}

/**
 * Answers a steer's receipt the way docs/design.md §5 gives it: 200 delivered, 202
 * still queued, and a dropped steer as the error `steer_dropped` carrying the
 * text back so the client can resend it.
 */
export function answerReceipt(res: HttpResponse, receipt: Receipt): Receipt {
  if (receipt.status === 'dropped') throw steerDropped(receipt);
  res.status(receipt.status === 'delivered' ? 200 : 202);
  return receipt;
}

export function steerDropped(receipt: Receipt): SteerlineError {
  const { steerId, turnId, position, text, reason, nextTurnId } = receipt;
  return new SteerlineError('steer_dropped', `the steer was dropped: ${reason ?? 'unknown reason'}`, { reason, steerId, turnId, position, text, ...(nextTurnId && { nextTurnId }) });
}
