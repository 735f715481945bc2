import Foundation

extension RecordRepository {
    /// Takes the versions that writes through the store's own record API gave this
    /// collection's records since the last call (see `LearnedVersions`): a change is taken
    /// only when the version it replaced is the one this repository knows (nil: absent or never
    /// seen), so a store write on top of another writer's change teaches nothing and that
    /// change stays a conflict.
    ///
    /// Called before every write computes its expectations, and after every read that sets
    /// versions (a change that committed after the read continues from what it read).
    ///
    /// The changes of keys in `unseen` are dropped: a partial load's skipped records stay
    /// unseen, so that a save under such a key conflicts. Their record may have come from a
    /// store write (absent before, so its change would match the skipped key's nil version),
    /// and learning it would let a save replace a record the app could not read.
    func learnStoreWrites(except unseen: Set<String> = []) {
        for (key, change) in inbox.drain() where versions[key] == change.before && !unseen.contains(key) {
            versions[key] = change.after
        }
    }
}
