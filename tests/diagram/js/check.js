// Checks thresh's BPMN exports for real: every file in the folder given (default
// ../../../target/diagrams/bpmn) is parsed by bpmn-moddle, failing on ANY import
// warning (unknown element or attribute, unresolved reference, ...), then linted with
// bpmnlint's recommended rules as configured in bpmnlint.config.js (see the rules
// disabled there and why). Exit code 1 on any problem.
//
// With `--against DIR`, the files are exports of real modelers' diagrams (the import
// corpus, tests/import/corpus/<source>/<file>.bpmn, exported as <source>_<file>.bpmn):
// each is held only to what its original passes, so a problem counts when the export
// has it and the original does not — the export adds none — and a modeler's own
// style (unnamed events, say) is not ours to fix. `label-required` is not held
// there: a flow whose condition the Rust binding gives, and an end the import made
// explicit, are unnamed as the file left them (an imported export names only what
// the file named).
'use strict';

const fs = require('fs');
const path = require('path');
const BpmnModdle = require('bpmn-moddle');
const { Linter } = require('bpmnlint');
const NodeResolver = require('bpmnlint/lib/resolver/node-resolver');

/// The problems of one file, as `kind: id: message` strings (`null`: it does not parse).
async function problemsOf(xml, config) {
  const moddle = new BpmnModdle();
  let parsed;
  try {
    parsed = await moddle.fromXML(xml, 'bpmn:Definitions');
  } catch (err) {
    return { error: err.message, problems: [] };
  }
  const problems = parsed.warnings.map((w) => `bpmn-moddle warning: ${w.message}`);
  // A linter per file: bpmnlint caches rule instances, and some rules keep state
  // across runs (no-duplicate-sequence-flows would compare flows of two files).
  const linter = new Linter({ config, resolver: new NodeResolver() });
  const reports = await linter.lint(parsed.rootElement);
  const instantiating = new Set();
  const processesWithGate = new Set();
  for (const root of parsed.rootElement.rootElements || []) {
    for (const el of root.flowElements || []) {
      if (el.$type === 'bpmn:EventBasedGateway' && el.instantiate) {
        instantiating.add(el.id);
        processesWithGate.add(root.id);
      }
    }
  }
  for (const [rule, entries] of Object.entries(reports)) {
    for (const entry of entries) {
      if (rule === 'no-implicit-start' && instantiating.has(entry.id)) continue;
      if (rule === 'start-event-required' && processesWithGate.has(entry.id)) continue;
      problems.push(`bpmnlint ${rule} (${entry.category}): ${entry.id}: ${entry.message}`);
    }
  }
  return { error: null, problems };
}

/// The corpus's originals by the name their exports take: `bpmn-io/qr-code.bpmn` is
/// `bpmn_io_qr_code`, `miwg/A.1.0.bpmn` is `miwg_a_1_0`.
function originals(dir) {
  const out = new Map();
  for (const source of fs.readdirSync(dir)) {
    const sub = path.join(dir, source);
    if (!fs.statSync(sub).isDirectory()) continue;
    for (const file of fs.readdirSync(sub).filter((f) => f.endsWith('.bpmn'))) {
      const name = `${source}_${file.slice(0, -5)}`.toLowerCase().replace(/[-.]/g, '_');
      out.set(name, path.join(sub, file));
    }
  }
  return out;
}

async function main() {
  const args = process.argv.slice(2);
  const at = args.indexOf('--against');
  const against = at >= 0 ? originals(path.resolve(args.splice(at, 2)[1])) : null;
  const dir = path.resolve(args[0] || path.join(__dirname, '../../../target/diagrams/bpmn'));
  const files = fs.readdirSync(dir).filter((f) => f.endsWith('.bpmn')).sort();
  if (files.length === 0) {
    console.error(`no .bpmn files in ${dir}: run \`cargo test --test diagram\` first`);
    process.exit(1);
  }
  const config = require('./bpmnlint.config.js');
  let problems = 0;
  for (const file of files) {
    const before = problems;
    const found = await problemsOf(fs.readFileSync(path.join(dir, file), 'utf8'), config);
    if (found.error !== null) {
      console.error(`${file}: does not parse: ${found.error}`);
      problems++;
      continue;
    }
    let theirs = new Set();
    if (against) {
      const original = against.get(file.slice(0, -5));
      if (!original) {
        console.error(`${file}: no original of that name in the corpus`);
        problems++;
        continue;
      }
      theirs = new Set((await problemsOf(fs.readFileSync(original, 'utf8'), config)).problems);
    }
    const ours = found.problems.filter(
      (p) => !theirs.has(p) && !(against && p.startsWith('bpmnlint label-required')),
    );
    for (const problem of ours) {
      console.error(`${file}: ${problem}`);
      problems++;
    }
    if (problems === before) {
      console.log(`ok ${file}`);
    }
  }
  if (problems > 0) {
    console.error(`${problems} problem(s) in ${files.length} file(s)`);
    process.exit(1);
  }
  console.log(`${files.length} BPMN files parse without warnings and pass bpmnlint`);
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
