import { z } from 'zod';
import { normalizeSteerText, steerLifecycle, STEER_TEXT_MAX } from '@steerline/contracts';
import { bodyUuid } from '../http/params';

// Trimmed and checked by the contract's own rule (docs/design.md §2.13), so the client
// hears about an empty or oversized text before any engine is asked.
const text = z
  .unknown()
  .transform((value) => normalizeSteerText(value))
  .meta({ type: 'string', minLength: 1, maxLength: STEER_TEXT_MAX, description: 'trimmed; 1–4000 characters after trimming; no control characters but tab and line breaks' });

export const TurnSteerBody = z.object({ text, steerId: bodyUuid().optional(), ...steerLifecycle }).strict();
export type TurnSteerBody = z.infer<typeof TurnSteerBody>;

export const ConversationSteerBody = z.object({ text, steerId: bodyUuid().optional(), expectedTurnId: bodyUuid().optional(), ...steerLifecycle }).strict();
export type ConversationSteerBody = z.infer<typeof ConversationSteerBody>;

export const EditSteerBody = z.object({ text }).strict();
export type EditSteerBody = z.infer<typeof EditSteerBody>;
