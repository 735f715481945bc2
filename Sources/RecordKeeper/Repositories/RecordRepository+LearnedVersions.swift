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
    func learnStoreWrites() {
        for (key, change) in inbox.drain() where versions[key] == change.before {
            versions[key] = change.after
        }
    }
}
