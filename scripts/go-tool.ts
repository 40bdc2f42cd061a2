// A test server built from source with `go install` into the cache beside the Temporal CLI's, found
// first at an env variable's path, then in the cache: the lookup every such tool needs, once.
import { dirname, join, resolve } from 'node:path';
import { isExecutableFile } from '../runtime/process';
import { cachedTemporalCliPath } from '../runtime/temporal-cli';
import { goInstall } from './go-install';

export interface GoTool {
  /** `<cache>/<name>-<version>/<binary>`. */
  cachedPath(this: void, env?: NodeJS.ProcessEnv): string;
  /** The env variable's binary, then the cache's; undefined when neither has it. */
  find(this: void, env?: NodeJS.ProcessEnv): Promise<string | undefined>;
  /** find, or else `go install` it into the cache (minutes, once). */
  ensure(this: void, env?: NodeJS.ProcessEnv, progress?: (line: string) => void): Promise<string>;
}

export function goTool(t: { name: string; module: string; version: string; binary: string; envVar: string }): GoTool {
  const spec = `${t.module}@${t.version}`;
  const fail = (message: string) => Object.assign(new Error(message), { name: `${t.name}BinaryError` });
  const cachedPath = (env: NodeJS.ProcessEnv = process.env) =>
    join(dirname(dirname(cachedTemporalCliPath({ env }))), `${t.name}-${t.version}`, t.binary);
  const find = async (env: NodeJS.ProcessEnv = process.env) => {
    const given = env[t.envVar];
    if (given) {
      const path = resolve(given);
      if (!(await isExecutableFile(path)))
        throw fail(`${t.envVar} is set to ${given}, which is not an executable file.`);
      return path;
    }
    const cached = cachedPath(env);
    return (await isExecutableFile(cached)) ? cached : undefined;
  };
  return {
    cachedPath,
    find,
    async ensure(env = process.env, progress = () => undefined) {
      const found = await find(env);
      if (found) return found;
      const target = cachedPath(env);
      await goInstall({
        module: spec,
        binary: t.binary,
        target,
        env,
        progress,
        fail,
        missingGo: `Go is needed to build ${t.name} (${spec}) into ${target}, or set ${t.envVar} to a ${t.name} binary.`,
      });
      progress(`built ${target}`);
      return target;
    },
  };
}
