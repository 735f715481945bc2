#!/usr/bin/env bash
# Writes the shared Xcode scheme `RecordKeeperDevice` into .swiftpm/xcode/xcshareddata/xcschemes
# (ignored by git: this script is its source). It builds the device-side targets only
# (RecordKeeperCoding, RecordKeeperSync, RecordKeeper, RecordKeeperFeatures, RecordKeeperTestSupport,
# LearnerKit) and holds the device-side test targets (RecordKeeperTests, RecordKeeperSyncTests,
# RecordKeeperFeaturesTests, LearnerTests), so that xcodebuild can build and
# run them for iOS, tvOS, watchOS and visionOS, where the package's server-side targets (libpq)
# and executables cannot build. See Package.swift and .github/workflows/apple.yml.
#
#   scripts/xcode-device-scheme.sh
#   xcodebuild build-for-testing -scheme RecordKeeperDevice -destination 'generic/platform=iOS Simulator'
set -euo pipefail
cd "$(dirname "$0")/.."

libraries=(RecordKeeperCoding RecordKeeperSync RecordKeeper RecordKeeperFeatures RecordKeeperTestSupport LearnerKit)
tests=(RecordKeeperTests RecordKeeperSyncTests RecordKeeperFeaturesTests LearnerTests)

reference() {
    cat <<XML
            <BuildableReference
               BuildableIdentifier = "primary"
               BlueprintIdentifier = "$1"
               BuildableName = "$1"
               BlueprintName = "$1"
               ReferencedContainer = "container:">
            </BuildableReference>
XML
}

directory=".swiftpm/xcode/xcshareddata/xcschemes"
mkdir -p "$directory"
{
    cat <<'XML'
<?xml version="1.0" encoding="UTF-8"?>
<Scheme
   LastUpgradeVersion = "1600"
   version = "1.7">
   <BuildAction
      parallelizeBuildables = "YES"
      buildImplicitDependencies = "YES">
      <BuildActionEntries>
XML
    for library in "${libraries[@]}"; do
        cat <<'XML'
         <BuildActionEntry
            buildForTesting = "YES"
            buildForRunning = "YES"
            buildForProfiling = "YES"
            buildForArchiving = "YES"
            buildForAnalyzing = "YES">
XML
        reference "$library"
        echo "         </BuildActionEntry>"
    done
    cat <<'XML'
      </BuildActionEntries>
   </BuildAction>
   <TestAction
      buildConfiguration = "Debug"
      selectedDebuggerIdentifier = "Xcode.DebuggerFoundation.Debugger.LLDB"
      selectedLauncherIdentifier = "Xcode.DebuggerFoundation.Launcher.LLDB"
      shouldUseLaunchSchemeArgsEnv = "YES">
      <Testables>
XML
    for test in "${tests[@]}"; do
        echo '         <TestableReference'
        echo '            skipped = "NO">'
        reference "$test"
        echo '         </TestableReference>'
    done
    cat <<'XML'
      </Testables>
   </TestAction>
   <LaunchAction
      buildConfiguration = "Debug"
      selectedDebuggerIdentifier = "Xcode.DebuggerFoundation.Debugger.LLDB"
      selectedLauncherIdentifier = "Xcode.DebuggerFoundation.Launcher.LLDB"
      launchStyle = "0"
      useCustomWorkingDirectory = "NO"
      ignoresPersistentStateOnLaunch = "NO"
      debugDocumentVersioning = "YES"
      debugServiceExtension = "internal"
      allowLocationSimulation = "YES">
   </LaunchAction>
</Scheme>
XML
} > "$directory/RecordKeeperDevice.xcscheme"
echo "wrote $directory/RecordKeeperDevice.xcscheme"
