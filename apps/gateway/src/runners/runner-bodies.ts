import { AwaitApprovalCommand, PublishLiveCommand, RenewLeaseCommand, ReportAnswerCommand, ReportResultsCommand, RunnerFailCommand, ReportInterruptedCommand } from '@steerline/contracts';

// The contract's commands without the tenant, which the gateway takes from the API key.
export const ReportAnswerBody = ReportAnswerCommand.omit({ tenantId: true });
export const ReportResultsBody = ReportResultsCommand.omit({ tenantId: true });
export const RunnerFailBody = RunnerFailCommand.omit({ tenantId: true });
export const RenewLeaseBody = RenewLeaseCommand.omit({ tenantId: true });
export const AwaitApprovalBody = AwaitApprovalCommand.omit({ tenantId: true, toolCallId: true });
export const PublishLiveBody = PublishLiveCommand.omit({ tenantId: true });
export const ReportInterruptedBody = ReportInterruptedCommand.omit({ tenantId: true });
