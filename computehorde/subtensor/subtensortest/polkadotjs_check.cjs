// Checks a set_weights extrinsic built by Drover's Go encoder with polkadot.js, an independent
// implementation: it decodes the runtime metadata, the call and the extrinsic, verifies the
// sr25519 signature, and writes its own encodings of the same inputs for the Go test to compare.
//
//   NODE_PATH=<dir>/node_modules node polkadotjs_check.cjs input.json > vector.json
//
// subtensortest.RunPolkadotJS runs it from Go tests.
//
// Needs @polkadot/types, @polkadot/util-crypto, @polkadot/keyring and @polkadot/util.
'use strict';
const fs = require('fs');
const { TypeRegistry, Metadata } = require('@polkadot/types');
const { Keyring } = require('@polkadot/keyring');
const { cryptoWaitReady, sr25519Verify, blake2AsU8a, blake2AsHex, xxhashAsU8a, decodeAddress } = require('@polkadot/util-crypto');
const { hexToU8a, u8aToHex, u8aConcat } = require('@polkadot/util');
const { packageInfo } = require('@polkadot/types/packageInfo');

async function main() {
  await cryptoWaitReady();
  const input = JSON.parse(fs.readFileSync(process.argv[2], 'utf8'));
  const registry = new TypeRegistry();
  const metadata = new Metadata(registry, input.metadata);
  registry.setMetadata(metadata);
  const pair = new Keyring({ type: 'sr25519', ss58Format: 42 }).addFromUri(input.uri);

  // Decode what Go built.
  const call = registry.createType('Call', input.call);
  const ext = registry.createType('Extrinsic', input.extrinsic);
  const options = {
    blockHash: input.era_hash, genesisHash: input.genesis, nonce: input.nonce, tip: input.tip,
    era: registry.createType('ExtrinsicEra', { current: input.era_block, period: input.era_period }),
    runtimeVersion: { specVersion: input.spec_version, transactionVersion: input.tx_version },
    mode: 0,
  };
  const payload = registry.createType('ExtrinsicPayload', {
    method: ext.method.toHex(), era: ext.era, nonce: ext.nonce, tip: ext.tip, mode: 0,
    specVersion: input.spec_version, transactionVersion: input.tx_version,
    genesisHash: input.genesis, blockHash: input.era_hash,
  }, { version: 4 });
  const signed = payload.toU8a({ method: true });
  const message = signed.length > 256 ? blake2AsU8a(signed, 256) : signed;
  let valid = false;
  try {
    valid = sr25519Verify(message, ext.signature.toU8a(), decodeAddress(ext.signer.toString()));
  } catch (e) {
    process.stderr.write(`signature does not verify: ${e.message}\n`);
  }

  // polkadot.js's own encodings of the same inputs.
  const own = registry.createType('Extrinsic', { method: registry.createType('Call', {
    callIndex: call.callIndex, args: { netuid: input.netuid, dests: input.uids, weights: input.weights, version_key: input.version_key },
  }).toHex() });
  own.sign(pair, options);
  const ownPayload = registry.createType('ExtrinsicPayload', {
    method: own.method.toHex(), era: own.era, nonce: own.nonce, tip: own.tip, mode: 0,
    specVersion: input.spec_version, transactionVersion: input.tx_version,
    genesisHash: input.genesis, blockHash: input.era_hash,
  }, { version: 4 });
  const netuid = new Uint8Array([input.netuid & 0xff, input.netuid >> 8]);
  const out = {
    generator: `@polkadot/types ${packageInfo.version}, ${process.version}`,
    input,
    decoded: {
      section: call.section, method: call.method,
      args: Object.fromEntries(call.meta.args.map((a, i) => [a.name.toString(), call.args[i].toJSON()])),
      extrinsic_call_equal: ext.method.toHex() === input.call,
      signed: ext.isSigned, signer: ext.signer.toString(), version: ext.version,
      era: ext.era.toJSON(), nonce: ext.nonce.toNumber(), tip: ext.tip.toString(),
      signed_extensions: registry.signedExtensions,
      signature_valid: valid, hash: ext.hash.toHex(),
    },
    polkadotjs: {
      public_key: u8aToHex(pair.publicKey), address: pair.address,
      call: own.method.toHex(),
      payload: u8aToHex(signed),
      own_extrinsic: own.toHex(), own_payload: u8aToHex(ownPayload.toU8a({ method: true })),
      own_signature: own.signature.toHex(),
      era: u8aToHex(ext.era.toU8a()),
      storage_key_commit_reveal: u8aToHex(u8aConcat(xxhashAsU8a('SubtensorModule', 128), xxhashAsU8a('CommitRevealWeightsEnabled', 128), netuid)),
      twox64_of_100_bytes: u8aToHex(xxhashAsU8a(new Uint8Array(100).map((_, i) => i), 64)),
      blake2_128_of_netuid: u8aToHex(blake2AsU8a(netuid, 128)),
      blake2_256_of_extrinsic: blake2AsHex(hexToU8a(input.extrinsic), 256),
    },
  };
  process.stdout.write(JSON.stringify(out, null, 1) + '\n');
}

main().catch((e) => { console.error(e); process.exit(1); });
