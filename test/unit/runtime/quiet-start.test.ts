// `npm start` prints a few clear lines: webpack's statistics of the workflow bundle are dropped,
// its warnings and errors are not. (test/integration/runtime/clean-stops.test.ts checks a real start.)
import type { Logger, LogLevel, LogMetadata } from '@temporalio/common';
import { describe, expect, it } from 'vitest';
import { bundlerLogger } from '../../../runtime/worker';

function recorder(): { logger: Logger; lines: [LogLevel, string][] } {
  const lines: [LogLevel, string][] = [];
  const log = (level: LogLevel, message: string, _meta?: LogMetadata) => void lines.push([level, message]);
  return {
    lines,
    logger: {
      log,
      trace: (m) => log('TRACE', m),
      debug: (m) => log('DEBUG', m),
      info: (m) => log('INFO', m),
      warn: (m) => log('WARN', m),
      error: (m) => log('ERROR', m),
    },
  };
}

describe('bundlerLogger', () => {
  it('drops the bundle statistics and keeps what needs attention', () => {
    const { logger, lines } = recorder();
    const quiet = bundlerLogger(logger);
    quiet.info(
      'asset workflow-bundle-1.js 1.99 MiB [emitted]\nmodules by path ./node_modules/ 388 KiB\nwebpack 5.112.2 compiled successfully in 1267 ms',
    );
    quiet.info('Workflow bundle created', { size: '1.99MB' });
    quiet.debug('resolving');
    quiet.info(
      "asset workflow-bundle-2.js 2 MiB\n\nWARNING in ./workflows/x.ts 3:0-20\nexport 'y' was not found\n\nwebpack 5.112.2 compiled with 1 warning in 900 ms",
    );
    quiet.log('ERROR', 'Module not found');
    quiet.error('Webpack finished with errors');
    expect(lines.map(([level, message]) => [level, message.split('\n')[0]])).toEqual([
      ['WARN', 'asset workflow-bundle-2.js 2 MiB'],
      ['ERROR', 'Module not found'],
      ['ERROR', 'Webpack finished with errors'],
    ]);
  });
});
