// Checks thresh's BPMN exports for real: every file in the folder given (default
// ../../../target/diagrams/bpmn) is parsed by bpmn-moddle, failing on ANY import
// warning (unknown element or attribute, unresolved reference, ...), then linted with
// bpmnlint's recommended rules as configured in bpmnlint.config.js (see the rules
// disabled there and why). Exit code 1 on any problem.
'use strict';

const fs = require('fs');
const path = require('path');
const BpmnModdle = require('bpmn-moddle');
const { Linter } = require('bpmnlint');
const NodeResolver = require('bpmnlint/lib/resolver/node-resolver');

async function main() {
  const dir = path.resolve(process.argv[2] || path.join(__dirname, '../../../target/diagrams/bpmn'));
  const files = fs.readdirSync(dir).filter((f) => f.endsWith('.bpmn')).sort();
  if (files.length === 0) {
    console.error(`no .bpmn files in ${dir}: run \`cargo test --test diagram\` first`);
    process.exit(1);
  }
  const config = require('./bpmnlint.config.js');
  let problems = 0;
  for (const file of files) {
    const before = problems;
    const xml = fs.readFileSync(path.join(dir, file), 'utf8');
    const moddle = new BpmnModdle();
    let parsed;
    try {
      parsed = await moddle.fromXML(xml, 'bpmn:Definitions');
    } catch (err) {
      console.error(`${file}: does not parse: ${err.message}`);
      problems++;
      continue;
    }
    for (const warning of parsed.warnings) {
      console.error(`${file}: bpmn-moddle warning: ${warning.message}`);
      problems++;
    }
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
        console.error(`${file}: bpmnlint ${rule} (${entry.category}): ${entry.id}: ${entry.message}`);
        problems++;
      }
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
