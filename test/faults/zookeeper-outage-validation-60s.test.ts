import { describeValidationOutage } from '../support/validation-outage.js';

/** ZooKeeper down 60 s while a validation VM boots (test/support/validation-outage.ts says what must hold). */
describeValidationOutage(60);
