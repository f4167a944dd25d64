/**
 * `make test`'s head start for the VM files: makes the bootable test image (qemu-image.ts) and
 * then the saved guest (qemu-saved-guest.ts) from the moment the apt and npm packages are in,
 * in the background beside the native build, the type-check and the lint (two to three minutes
 * that the image's downloads and the guest's boot would otherwise wait for). The test runner's
 * own calls then find them made, or wait on this process's locks (test/support/made-once.ts);
 * what fails here is made again, and reported, by the runner. Prints what it did, with times.
 */
import { bootableImage } from './qemu-image.js';
import { savedGuest } from './qemu-saved-guest.js';

const started = Date.now();
const seconds = (): string => ((Date.now() - started) / 1000).toFixed(0);
try {
  const image = await bootableImage();
  console.log(`bootable test image ${image.buildSeconds ? 'built' : 'found made'} after ${seconds()} s: ${image.path}`);
  const saved = await savedGuest();
  console.log(`saved test guest ${saved.saveSeconds ? 'booted and saved' : 'found made'} after ${seconds()} s: ${saved.dir}`);
} catch (err) {
  console.error(`not made after ${seconds()} s, the test runner tries again: ${(err as Error).message}`);
  process.exitCode = 1;
}
