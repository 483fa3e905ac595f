import { ExternalTurns, type StartExternalTurnOptions } from '@steerline/client';
import { SteerlineTurn } from './turn';

/** Steerline for an agent written with the OpenAI Agents SDK: start a turn, then `turn.run(agent, prompt)`. */
export class Steerline extends ExternalTurns {
  /** Starts a turn that this process runs (`"runner": "external"`), holding its runner lease until it ends. */
  async startTurn(opts: StartExternalTurnOptions): Promise<SteerlineTurn> {
    return new SteerlineTurn(await this.start(opts), opts.conversationId);
  }
}
