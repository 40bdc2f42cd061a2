import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { chromium } from 'playwright-core';
import type { BrowserContext, Page } from 'playwright-core';

/** Debian's Chromium (`apt-get install -y chromium`): Playwright's own browser download cannot work here. */
export const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';

/**
 * Headless Chromium with a fresh profile, talking to nothing but this machine: the background
 * services (updates, sync, component downloads, QUIC probes) would try the network, which is closed.
 */
export async function launchBrowser(): Promise<{
  context: BrowserContext;
  page: Page;
  pageErrors: string[];
  close: () => Promise<void>;
}> {
  if (!existsSync(CHROMIUM))
    throw new Error(`Chromium is missing at ${CHROMIUM}: apt-get install -y chromium (or set CHROMIUM_PATH)`);
  const profile = await mkdtemp(join(tmpdir(), 'gensvc-chromium-'));
  const context = await chromium.launchPersistentContext(profile, {
    executablePath: CHROMIUM,
    headless: true,
    viewport: { width: 1280, height: 860 },
    args: [
      '--headless',
      '--no-sandbox',
      '--disable-gpu',
      '--disable-quic',
      '--no-first-run',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
    ],
  });
  // Every uncaught error of the first page is kept: a test ends by asserting there was none.
  const page = context.pages()[0] ?? (await context.newPage());
  const pageErrors: string[] = [];
  page.on('pageerror', (err) => pageErrors.push(err.message));
  return {
    context,
    page,
    pageErrors,
    async close() {
      // Closing the context ends the browser process (Playwright waits for it) and its children.
      await context.close();
      await rm(profile, { recursive: true, force: true });
    },
  };
}

/**
 * Where a browser test's screenshots go. Every run takes them (they render each page); they
 * replace docs/screenshots/ only with UPDATE_SCREENSHOTS=1, so that a test run leaves the working
 * tree as it was.
 */
export function screenshotFolder(name: string): {
  dir: string;
  make: () => Promise<void>;
  remove: () => Promise<void>;
} {
  const update = process.env.UPDATE_SCREENSHOTS === '1';
  const dir = update
    ? new URL('../../docs/screenshots/', import.meta.url).pathname
    : `${join(tmpdir(), `gensvc-${name}-shots-${process.pid}`)}/`;
  return {
    dir,
    make: async () => {
      await mkdir(dir, { recursive: true });
    },
    remove: async () => {
      if (!update) await rm(dir, { recursive: true, force: true });
    },
  };
}
