import Docker from 'dockerode';
import type { Config } from '../../core/index.js';

/** A dockerode client for the configured engine socket. */
export function createDocker(config: Pick<Config, 'docker'>): Docker {
  return new Docker({ socketPath: config.docker.socketPath });
}
