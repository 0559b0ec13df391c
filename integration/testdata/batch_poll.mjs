// What the batch scripts share: polling a batch until it is done. A test
// installs it beside the script (installScript), as
// modelgate-batch_poll-test.mjs.
export const pause = (ms) => new Promise((r) => setTimeout(r, ms));

// Polls until done(value) or 60 s (the Go test's bound covers it).
export async function until(get, done) {
  for (let i = 0; i < 600; i++) {
    const v = await get();
    if (done(v)) return v;
    await pause(100);
  }
  throw new Error('batch did not end within 60 s');
}
