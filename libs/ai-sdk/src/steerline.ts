import { ExternalTurns, type StartExternalTurnOptions } from '@steerline/client';
import { SteerlineTurn } from './turn';

/** Steerline for an agent written with the AI SDK: start a turn, then `turn.run(hooks => generateText({ ...hooks }))`. */
export class Steerline extends ExternalTurns {
  /** Starts a turn that this process runs (`"runner": "external"`), holding its runner lease until it ends. */
  async startTurn(opts: StartExternalTurnOptions): Promise<SteerlineTurn> {
    return new SteerlineTurn(await this.start(opts), opts.conversationId, opts.prompt);
  }
}
