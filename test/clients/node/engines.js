// Whether this Node.js runs the npm packages named, by the engines field of
// each one's package.json, as npm reads it (run by test/clients/run.sh before
// a Node test: bookworm's nodejs is 18, older than several of them need).
//
//   node engines.js PACKAGE... ['node RANGE WHY']
//
// Exits 0 if every range holds; else prints why not and exits 1. A range is
// alternatives joined by ||, each of comparators (>=, >, <=, <, ^, ~ or a
// version) that must all hold.
'use strict';
const fs = require('node:fs');
const path = require('node:path');

const version = process.versions.node.split('.').map(Number);

function parse(text) {
  const parts = text.split('.').map(Number);
  return [parts[0] || 0, parts[1] || 0, parts[2] || 0];
}

function compare(a, b) {
  for (let i = 0; i < 3; i += 1) if (a[i] !== b[i]) return a[i] - b[i];
  return 0;
}

function holds(comparator) {
  const [, operator, text] = /^(>=|<=|>|<|\^|~|=)?v?([\d.x*]+)$/.exec(comparator) || [];
  if (text === undefined) throw new Error(`cannot read the version range ${comparator}`);
  const wanted = parse(text.replace(/[x*]/g, '0'));
  const order = compare(version, wanted);
  switch (operator) {
    case '>=': return order >= 0;
    case '>': return order > 0;
    case '<=': return order <= 0;
    case '<': return order < 0;
    case '^': return order >= 0 && version[0] === wanted[0];
    case '~': return order >= 0 && version[0] === wanted[0] && version[1] === wanted[1];
    default: return order === 0;
  }
}

function satisfies(range) {
  return range.split('||').some((alternative) =>
    alternative.trim().replace(/(>=|<=|>|<|=)\s+/g, '$1').split(/\s+/).filter(Boolean).every(holds));
}

const refusals = [];
for (const argument of process.argv.slice(2)) {
  const own = /^node (\S+) (.+)$/.exec(argument);
  if (own) {
    if (!satisfies(own[1])) refusals.push(own[2]);
    continue;
  }
  const file = path.join(__dirname, 'node_modules', argument, 'package.json');
  const { version: packageVersion, engines } = JSON.parse(fs.readFileSync(file, 'utf8'));
  if (engines && engines.node && !satisfies(engines.node)) {
    refusals.push(`${argument} ${packageVersion} needs Node.js ${engines.node}`);
  }
}
if (refusals.length > 0) {
  console.log(`${refusals.join('; ')}; this is ${process.version}`);
  process.exit(1);
}
