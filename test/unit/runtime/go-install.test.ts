// Building a Go module whose go.mod has `replace` directives (Jaeger's), which `go install
// pkg@version` refuses: runtime/go-install.ts builds it inside a main module of its own holding that
// go.mod and go.sum. A stand-in for go records what it is asked and where.
import { chmod, mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { goInstallIntoCache } from '../../../runtime/go-install';

const dirs: string[] = [];
afterAll(async () => {
  await Promise.all(dirs.map((dir) => rm(dir, { recursive: true, force: true })));
});

const MOD = `module example.com/tool

go 1.24

require github.com/Shopify/sarama v1.38.1

replace github.com/Shopify/sarama => github.com/Shopify/sarama v1.33.0
`;

describe('goInstallIntoCache with a replacing module', () => {
  it('builds the packages inside a main module with that go.mod (its replacements kept) and go.sum, requiring exactly that version', async () => {
    const root = await mkdtemp(join(tmpdir(), 'gensvc-go-install-'));
    dirs.push(root);
    const [bin, source, seen] = [join(root, 'bin'), join(root, 'module-cache'), join(root, 'seen')];
    await Promise.all([mkdir(bin), mkdir(source), mkdir(seen)]);
    await writeFile(join(source, 'tool.mod'), MOD);
    await writeFile(join(source, 'go.sum'), 'github.com/Shopify/sarama v1.33.0 h1:abc=\n');
    await writeFile(
      join(bin, 'go'),
      `#!/bin/sh
echo "$PWD|$GOFLAGS|$*" >> ${seen}/calls
case "$1" in
  mod) echo '{"Path":"example.com/tool","Version":"v1.2.3","GoMod":"${source}/tool.mod","Dir":"${source}"}' ;;
  install) cp go.mod go.sum ${seen}/; printf '#!/bin/sh\\n' > "$GOBIN/tool"; chmod +x "$GOBIN/tool" ;;
esac
`,
    );
    await chmod(join(bin, 'go'), 0o755);

    const dir = join(root, 'cache', 'tool-v1.2.3');
    const built = await goInstallIntoCache({
      what: 'the tool',
      packages: [{ pkg: 'example.com/tool/cmd/tool', binary: 'tool' }],
      replacingModule: { path: 'example.com/tool', version: 'v1.2.3' },
      dir,
      env: { PATH: `${bin}:/usr/bin:/bin`, GOFLAGS: '-buildvcs=false' },
      progress: () => undefined,
      instead: 'TOOL_BINARY',
    });

    expect(built).toEqual([join(dir, 'tool')]);
    const calls = (await readFile(join(seen, 'calls'), 'utf8'))
      .trim()
      .split('\n')
      .map((line) => line.split('|'));
    expect(calls.map(([, flags, args]) => [flags, args])).toEqual([
      ['-buildvcs=false', 'mod download -json example.com/tool@v1.2.3'],
      ['-buildvcs=false -mod=mod', 'install example.com/tool/cmd/tool'],
    ]);
    // Built inside the staging folder, which is gone once the binary is in place.
    expect(calls[1]![0]).toMatch(/tool-v1\.2\.3\.partial-\d+\/main-module$/);
    const goMod = await readFile(join(seen, 'go.mod'), 'utf8');
    expect(goMod).toMatch(/^module gensvc\.local\/go-install$/m);
    expect(goMod).not.toMatch(/^module example\.com\/tool$/m);
    expect(goMod).toContain('replace github.com/Shopify/sarama => github.com/Shopify/sarama v1.33.0');
    expect(goMod).toContain('require example.com/tool v1.2.3\n');
    expect(await readFile(join(seen, 'go.sum'), 'utf8')).toBe('github.com/Shopify/sarama v1.33.0 h1:abc=\n');
  });
});
