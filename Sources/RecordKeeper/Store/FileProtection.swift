/// The data-protection class of the files a store (or a ``SnapshotCache``) creates: when the
/// system keeps them encrypted and unreadable while the device is locked.
///
/// Effective on iOS, iPadOS, tvOS, watchOS and visionOS (it is Apple's `FileProtectionType`).
/// On macOS and Linux the option is accepted and has no effect: files are created as there
/// without it.
///
/// What it applies to, where effective: the store file when the store creates it, the `-wal`
/// and `-shm` files (SQLite creates them with the class, through its
/// `SQLITE_OPEN_FILEPROTECTION_*` open flags), the directories the store creates for it,
/// backups (``RecordStore/backup(to:overwrite:)``), and a snapshot cache's directory and files.
/// The empty `-observers` lock file beside a store (docs/FORMAT.md) gets the app's default
/// class: it holds no data, and a class that locks would only make change streams fail while
/// the device is locked. A file that already exists keeps the class it has:
/// change it with `FileManager.setAttributes(_:ofItemAtPath:)`.
///
/// A protected file cannot be opened (and, for ``complete``, not even read through a
/// descriptor that is open) while its class's key is unavailable: requests then fail with
/// ``RecordStoreError/Code/protectedDataUnavailable`` (``SnapshotCacheError/Code/protectedDataUnavailable``
/// for a cache), never `readOnly`, and work again once the user unlocks the device. Background
/// work that must run while the device is locked (a sync, a widget extension) needs
/// ``completeUntilFirstUserAuthentication`` (the system's default for apps) or ``none``.
///
/// ```swift
/// var options = RecordStore.Options()
/// options.fileProtection = .completeUntilFirstUserAuthentication
/// let store = RecordStore(url: supportDirectory.appending(path: "records.sqlite"), options: options)
/// ```
public enum FileProtection: String, Sendable, CaseIterable {
    /// The library sets no class: files get the app's default (from its data-protection
    /// entitlement, else the system's, `completeUntilFirstUserAuthentication`). The default.
    case systemDefault
    /// `FileProtectionType.complete`: readable only while the device is unlocked; a few seconds
    /// after it locks, even open files cannot be read or written.
    case complete
    /// `FileProtectionType.completeUnlessOpen`: a file open when the device locks stays usable;
    /// opening it while locked fails.
    case completeUnlessOpen
    /// `FileProtectionType.completeUntilFirstUserAuthentication`: usable from the first unlock
    /// after a restart on, locked or not.
    case completeUntilFirstUserAuthentication
    /// `FileProtectionType.none`: always usable.
    case none
}
