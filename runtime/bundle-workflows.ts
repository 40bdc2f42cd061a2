// Bundles the workflows for a worker (runtime/worker.ts runs this as a child process, so that
// webpack's memory goes away with it):
//   node --import tsx runtime/bundle-workflows.ts <workflows entry> <out.js> [workflow interceptor module…]
import { writeFile } from 'node:fs/promises';
import { bundleWorkflowCode, DefaultLogger } from '@temporalio/worker';

const [workflowsPath, out, ...workflowInterceptorModules] = process.argv.slice(2);
if (!workflowsPath || !out) {
  console.error('usage: bundle-workflows.ts <workflows entry> <out.js> [workflow interceptor module…]');
  process.exit(2);
}
const { code } = await bundleWorkflowCode({
  workflowsPath,
  workflowInterceptorModules,
  logger: new DefaultLogger('WARN'),
});
await writeFile(out, code);
