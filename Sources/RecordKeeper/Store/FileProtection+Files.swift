import Foundation

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Darwin)
    import Darwin
#endif

extension FileProtection {
    /// True on the platforms where data protection exists: iOS, iPadOS, tvOS, watchOS, visionOS.
    static var isEffective: Bool {
        #if os(iOS) || os(tvOS) || os(watchOS) || os(visionOS)
            true
        #else
            false
        #endif
    }

    /// The `SQLITE_OPEN_FILEPROTECTION_*` flag of Apple's SQLite for this class (the values of
    /// its `sqlite3.h`); 0 for ``systemDefault`` and where data protection does not exist.
    var sqliteOpenFlag: Int32 {
        guard Self.isEffective else { return 0 }
        switch self {
        case .systemDefault: return 0
        case .complete: return 0x0010_0000
        case .completeUnlessOpen: return 0x0020_0000
        case .completeUntilFirstUserAuthentication: return 0x0030_0000
        case .none: return 0x0040_0000
        }
    }

    #if os(iOS) || os(tvOS) || os(watchOS) || os(visionOS)
        var fileProtectionType: FileProtectionType? {
            switch self {
            case .systemDefault: nil
            case .complete: .complete
            case .completeUnlessOpen: .completeUnlessOpen
            case .completeUntilFirstUserAuthentication: .completeUntilFirstUserAuthentication
            case .none: FileProtectionType.none
            }
        }

        init?(_ type: FileProtectionType) {
            switch type {
            case .complete: self = .complete
            case .completeUnlessOpen: self = .completeUnlessOpen
            case .completeUntilFirstUserAuthentication: self = .completeUntilFirstUserAuthentication
            case FileProtectionType.none: self = .none
            default: return nil
            }
        }
    #endif

    /// Attributes to create a directory with: `0700`, plus the class where effective.
    func directoryAttributes() -> [FileAttributeKey: Any] {
        var attributes: [FileAttributeKey: Any] = [.posixPermissions: 0o700]
        #if os(iOS) || os(tvOS) || os(watchOS) || os(visionOS)
            if let type = fileProtectionType { attributes[.protectionKey] = type }
        #endif
        return attributes
    }

    /// Gives the file or directory at `path`, which the library just created, this class. Does
    /// nothing for ``systemDefault`` and where data protection does not exist.
    ///
    /// - Throws: the system's error when the class cannot be set: the file would otherwise be
    ///   less protected than asked.
    func apply(to path: String) throws {
        #if os(iOS) || os(tvOS) || os(watchOS) || os(visionOS)
            guard let type = fileProtectionType else { return }
            try FileManager.default.setAttributes([.protectionKey: type], ofItemAtPath: path)
        #endif
    }
}

/// Tells "protected data is not available now" (a data-protected file while the device is
/// locked) from the failures that look like it: the system reports both with `EPERM`.
enum ProtectedData {
    /// True when `number`, the `errno` of a failed call on `path`, means that `path` (or, when
    /// it does not exist, its directory) is protected by a class whose key is unavailable now.
    /// Always false where data protection does not exist (macOS, Linux).
    static func isUnavailable(errno number: Int32, path: String) -> Bool {
        guard FileProtection.isEffective, number == EPERM else { return false }
        return isUnavailable(errno: number, protection: protection(ofFileOrDirectory: path))
    }

    /// The decision itself: `EPERM` on a file whose class is one that locks (anything but
    /// ``FileProtection/none``). An unknown class (the attribute could not be read) is not
    /// taken for protection: the failure keeps its ordinary meaning.
    static func isUnavailable(errno number: Int32, protection: FileProtection?) -> Bool {
        guard number == EPERM, let protection else { return false }
        return protection != .none && protection != .systemDefault
    }

    /// The class of the file at `path`, or of its directory when there is no file; nil when it
    /// cannot be read or where data protection does not exist.
    static func protection(ofFileOrDirectory path: String) -> FileProtection? {
        #if os(iOS) || os(tvOS) || os(watchOS) || os(visionOS)
            // Metadata stays readable while the device is locked: only contents are encrypted.
            let manager = FileManager.default
            let target = manager.fileExists(atPath: path) ? path : (path as NSString).deletingLastPathComponent
            let attributes: [FileAttributeKey: Any]
            do {
                attributes = try manager.attributesOfItem(atPath: target.isEmpty ? "." : target)
            } catch {
                // Only classifies a failure already being reported: unknown, so it keeps its
                // ordinary meaning (nothing is lost by not knowing the class).
                return nil
            }
            guard let type = attributes[.protectionKey] as? FileProtectionType else { return nil }
            return FileProtection(type)
        #else
            return nil
        #endif
    }
}
