import t from 'tap';
import { decideAdoption, type AdoptionFacts } from '../../daemon/runtime/adoption.js';
import { parseClaim, type Claim } from '../../daemon/runtime/slots.js';

const claim: Claim = {
  session_id: 's-1',
  user_id: 7,
  claimed_at: 1,
  egress_allow: ['a:443'],
  token_envs: ['MAIL_ACCESS_TOKEN'],
};
const base: AdoptionFacts = {
  running: true,
  hasSlotFolder: true,
  poolLabel: false,
  ping: { state: 'started', session_id: 's-1' },
  claim,
  poolEnabled: true,
  sessionTaken: false,
  userMayAdopt: true,
};

t.test('adoption decision table', async (t) => {
  const rows: [string, Partial<AdoptionFacts>, string][] = [
    ['a started session with its claim is adopted', {}, 'adopt'],
    ['an exited container is dropped', { running: false }, 'drop'],
    ['a container without its slot folder is dropped', { hasSlotFolder: false }, 'drop'],
    ['an unreachable supervisor is dropped', { ping: null }, 'drop'],
    ['a started supervisor without claim.json is dropped', { claim: undefined }, 'drop'],
    [
      'a supervisor serving another session than its claim is dropped',
      { ping: { state: 'started', session_id: 's-other' } },
      'drop',
    ],
    ['a second container of an adopted session is dropped', { sessionTaken: true }, 'drop'],
    ['a session of a user no longer active is dropped', { userMayAdopt: false }, 'drop'],
    [
      'a waiting pool container rejoins the pool',
      { poolLabel: true, claim: undefined, ping: { state: 'hello' } },
      'pool',
    ],
    [
      'a waiting pool container is dropped when the pool is disabled',
      { poolLabel: true, claim: undefined, ping: { state: 'hello' }, poolEnabled: false },
      'drop',
    ],
    ['a hello container without the pool label is dropped', { claim: undefined, ping: { state: 'hello' } }, 'drop'],
    [
      'a hello container with a claim (start never reached) is dropped',
      { poolLabel: true, ping: { state: 'hello' } },
      'drop',
    ],
    ['a claimed pool container that started is adopted', { poolLabel: true }, 'adopt'],
  ];
  for (const [what, facts, action] of rows) {
    const d = decideAdoption({ ...base, ...facts });
    t.equal(d.action, action, what);
  }
  const deactivated = decideAdoption({ ...base, userMayAdopt: false });
  t.ok(deactivated.action === 'drop' && deactivated.userDeactivated, 'a deactivated user is counted as such');
  const adopted = decideAdoption(base);
  t.same(adopted.action === 'adopt' && adopted.claim, claim, 'the adopted session carries its claim');
});

t.test('claim.json is checked field by field', async (t) => {
  t.same(parseClaim(JSON.stringify(claim)), claim);
  t.equal(parseClaim('not json'), undefined);
  t.equal(parseClaim('[]'), undefined);
  t.equal(parseClaim(JSON.stringify({ ...claim, user_id: '7' })), undefined, 'user id must be a number');
  t.equal(parseClaim(JSON.stringify({ ...claim, user_id: 0 })), undefined, 'user id must be positive');
  t.equal(parseClaim(JSON.stringify({ ...claim, session_id: '' })), undefined, 'session id must be set');
  const odd = parseClaim(
    JSON.stringify({ ...claim, token_envs: ['MAIL_ACCESS_TOKEN', 'bad name', 3], egress_allow: 'x' }),
  );
  t.same(odd?.token_envs, ['MAIL_ACCESS_TOKEN'], 'only env names are kept');
  t.same(odd?.egress_allow, [], 'a malformed allow list allows nothing');
});
