import { z } from 'zod';
import { normalizeSteerText } from '@steerline/contracts';
import { bodyUuid } from '../http/params';

// Trimmed and checked by the contract's own rule (DESIGN §2.12), so the client
// hears about an empty or oversized text before any engine is asked.
const text = z.unknown().transform((value) => normalizeSteerText(value));

export const TurnSteerBody = z.object({ text, steerId: bodyUuid().optional() }).strict();
export type TurnSteerBody = z.infer<typeof TurnSteerBody>;

export const ConversationSteerBody = z.object({ text, steerId: bodyUuid().optional(), expectedTurnId: bodyUuid().optional() }).strict();
export type ConversationSteerBody = z.infer<typeof ConversationSteerBody>;
