import { z } from 'zod';
import { APPROVAL_VERDICTS } from '@steerline/contracts';

export const ApprovalDecisionBody = z.object({ decision: z.enum(APPROVAL_VERDICTS), reason: z.string().max(500).optional() }).strict();
export type ApprovalDecisionBody = z.infer<typeof ApprovalDecisionBody>;
