"""The feature gates each recorded kube-apiserver release accepts (`--feature-gates`): what
`kube-apiserver -h` lists and, for its GA gates, the names of that release's kube_features.go.
Written by tests/fixtures/featuregates/record.py; data only."""

from __future__ import annotations

_CHANGES = """\
1.28: +APIListChunking +APIPriorityAndFairness +APIResponseCompression +APISelfSubjectReview +APIServerIdentity
    +APIServerTracing +AdmissionWebhookMatchConditions +AggregatedDiscoveryEndpoint +AllAlpha +AllBeta
    +AnyVolumeDataSource +AppArmor +CPUCFSQuotaPeriod +CPUManager +CPUManagerPolicyAlphaOptions
    +CPUManagerPolicyBetaOptions +CPUManagerPolicyOptions +CRDValidationRatcheting +CSIMigrationAzureFile
    +CSIMigrationPortworx +CSIMigrationRBD +CSIMigrationvSphere +CSINodeExpandSecret +CSIVolumeHealth
    +CloudControllerManagerWebhook +CloudDualStackNodeIPs +ClusterTrustBundle +ComponentSLIs
    +ConsistentHTTPGetHandlers +ConsistentListFromCache +ContainerCheckpoint +ContextualLogging +CronJobTimeZone
    +CronJobsScheduledAnnotation +CrossNamespaceVolumeDataSource +CustomCPUCFSQuotaPeriod
    +CustomResourceValidationExpressions +DefaultHostNetworkHostPortsInPodTemplates +DevicePluginCDIDevices
    +DisableCloudProviders +DisableKubeletCloudCredentialProviders +DownwardAPIHugePages +DynamicResourceAllocation
    +ElasticIndexedJob +EventedPLEG +ExecProbeTimeout +ExpandedDNSConfig +ExperimentalHostUserNamespaceDefaultingGate
    +GRPCContainerProbe +GracefulNodeShutdown +GracefulNodeShutdownBasedOnPodPriority +HPAContainerMetrics
    +HPAScaleToZero +HonorPVReclaimPolicy +IPTablesOwnershipCleanup +InPlacePodVerticalScaling
    +InTreePluginAWSUnregister +InTreePluginAzureDiskUnregister +InTreePluginAzureFileUnregister
    +InTreePluginGCEUnregister +InTreePluginOpenStackUnregister +InTreePluginPortworxUnregister
    +InTreePluginRBDUnregister +InTreePluginvSphereUnregister +JobBackoffLimitPerIndex
    +JobMutableNodeSchedulingDirectives +JobPodFailurePolicy +JobPodReplacementPolicy +JobReadyPods
    +JobTrackingWithFinalizers +KMSv2 +KMSv2KDF +KubeProxyDrainingTerminatingNodes +KubeletCgroupDriverFromCRI
    +KubeletInUserNamespace +KubeletPodResources +KubeletPodResourcesDynamicResources +KubeletPodResourcesGet
    +KubeletPodResourcesGetAllocatable +KubeletTracing +LegacyServiceAccountTokenCleanUp
    +LegacyServiceAccountTokenNoAutoGeneration +LegacyServiceAccountTokenTracking
    +LocalStorageCapacityIsolationFSQuotaMonitoring +LogarithmicScaleDown +LoggingAlphaOptions +LoggingBetaOptions
    +MatchLabelKeysInPodTopologySpread +MaxUnavailableStatefulSet +MemoryManager +MemoryQoS
    +MinDomainsInPodTopologySpread +MinimizeIPTablesRestore +MultiCIDRRangeAllocator +MultiCIDRServiceAllocator
    +NewVolumeManagerReconstruction +NodeInclusionPolicyInPodTopologySpread +NodeLogQuery
    +NodeOutOfServiceVolumeDetach +NodeSwap +OpenAPIEnums +PDBUnhealthyPodEvictionPolicy
    +PersistentVolumeLastPhaseTransitionTime +PodAndContainerStatsFromCRI +PodDeletionCost +PodDisruptionConditions
    +PodHostIPs +PodIndexLabel +PodReadyToStartContainersCondition +PodSchedulingReadiness
    +ProbeTerminationGracePeriod +ProcMountType +ProxyTerminatingEndpoints +QOSReserved +ReadWriteOncePod
    +RecoverVolumeExpansionFailure +RemainingItemCount +RetroactiveDefaultStorageClass +RotateKubeletServerCertificate
    +SELinuxMountReadWriteOncePod +SchedulerQueueingHints +SeccompDefault +SecurityContextDeny
    +ServiceNodePortStaticSubrange +SidecarContainers +SizeMemoryBackedVolumes +SkipReadOnlyValidationGCE
    +StableLoadBalancerNodeSet +StatefulSetAutoDeletePVC +StatefulSetStartOrdinal +StorageVersionAPI
    +StorageVersionHash +TopologyAwareHints +TopologyManager +TopologyManagerPolicyAlphaOptions
    +TopologyManagerPolicyBetaOptions +TopologyManagerPolicyOptions +UnauthenticatedHTTP2DOSMitigation
    +UnknownVersionInteroperabilityProxy +UserNamespacesSupport +ValidatingAdmissionPolicy +VolumeCapacityPriority
    +WatchList +WinDSR +WinOverlay +WindowsHostNetwork
1.34: +APIServingWithRoutine +AllowDNSOnlyNodeCSR +AllowInsecureKubeletCertificateSigningRequests
    +AllowOverwriteTerminationGracePeriodSeconds +AllowParsingUserUIDFromCertAuth +AllowServiceLBStatusOnNonLB
    +AllowUnsafeMalformedObjectDeletion +AuthorizeNodeWithSelectors +CBORServingAndStorage
    +ClearingNominatedNodeNameAfterBinding +ClientsAllowCBOR +ClientsPreferCBOR +ClusterTrustBundleProjection
    +ComponentFlagz +ComponentStatusz +ConcurrentWatchObjectDecode +ContainerRestartRules +ContainerStopSignals
    +CoordinatedLeaderElection +DRAAdminAccess +DRAConsumableCapacity +DRADeviceBindingConditions +DRADeviceTaints
    +DRAExtendedResource +DRAPartitionableDevices +DRAPrioritizedList +DRAResourceClaimDeviceStatus
    +DRASchedulerFilterTimeout +DeclarativeValidation +DeclarativeValidationTakeover
    +DeploymentReplicaSetTerminatingReplicas +DetectCacheInconsistency +DisableAllocatorDualWrite
    +DisableCPUQuotaWithExclusiveCPUs +DisableNodeKubeProxyVersion +EnvFiles +ExternalServiceAccountTokenSigner
    +GitRepoVolumeDriver +HPAConfigurableTolerance +HostnameOverride +ImageMaximumGCAge +ImageVolume +InOrderInformers
    +InPlacePodVerticalScalingAllocatedStatus +InPlacePodVerticalScalingExclusiveCPUs
    +InPlacePodVerticalScalingExclusiveMemory +InformerResourceVersion +JobManagedBy +JobSuccessPolicy
    +KubeletCrashLoopBackOffMax +KubeletEnsureSecretPulledImages +KubeletFineGrainedAuthz +KubeletPSI
    +KubeletPodResourcesListUseActivePods +KubeletRegistrationGetOnExistsOnly +KubeletSeparateDiskGC
    +KubeletServiceAccountTokenForCredentialProviders +ListFromCacheSnapshot +LoadBalancerIPMode
    +MatchLabelKeysInPodAffinity +MatchLabelKeysInPodTopologySpreadSelectorMerge +MutableCSINodeAllocatableCount
    +MutatingAdmissionPolicy +NFTablesProxyMode +NominatedNodeNameForExpectation +OrderedNamespaceDeletion
    +PodCertificateRequest +PodLevelResources +PodLifecycleSleepAction +PodLifecycleSleepActionAllowZero
    +PodLogsQuerySplitStreams +PodObservedGenerationTracking +PodTopologyLabelsAdmission +PortForwardWebsockets
    +PreferSameTrafficDistribution +PreventStaticPodAPIReferences +ProbeHostPodSecurityStandards
    +RecursiveReadOnlyMounts +ReduceDefaultCrashLoopBackOffDecay +RelaxedDNSSearchValidation
    +RelaxedEnvironmentVariableValidation +RelaxedServiceNameValidation +ReloadKubeletServerCertificateFile
    +RemoteRequestHeaderUID +ResourceHealthStatus +RuntimeClassInImageCriAPI +RuntimeClassInImageCriApi
    +SELinuxChangePolicy +SELinuxMount +SchedulerAsyncAPICalls +SchedulerAsyncPreemption +SchedulerPopFromBackoffQ
    +SeparateTaintEvictionController +ServiceAccountNodeAudienceRestriction +ServiceAccountTokenJTI
    +ServiceAccountTokenNodeBinding +ServiceAccountTokenNodeBindingValidation +ServiceAccountTokenPodNodeInfo
    +ServiceTrafficDistribution +SizeBasedListCostEstimate +StatefulSetSemanticRevisionComparison
    +StorageCapacityScoring +StorageNamespaceIndex +StorageVersionMigrator +StreamingCollectionEncodingToJSON
    +StreamingCollectionEncodingToProtobuf +StrictIPCIDRValidation
    +StructuredAuthenticationConfigurationEgressSelector +SupplementalGroupsPolicy +SystemdWatchdog
    +TokenRequestServiceAccountUIDValidation +TranslateStreamCloseWebsocketRequests
    +UserNamespacesPodSecurityStandards +VolumeAttributesClass +WatchCacheInitializationPostStartHook +WatchListClient
    +WindowsCPUAndMemoryAffinity +WindowsGracefulNodeShutdown -APIListChunking -APIPriorityAndFairness
    -APISelfSubjectReview -APIServerTracing -AdmissionWebhookMatchConditions -AggregatedDiscoveryEndpoint -AppArmor
    -CPUManager -CRDValidationRatcheting -CSIMigrationAzureFile -CSIMigrationRBD -CSIMigrationvSphere
    -CSINodeExpandSecret -CloudDualStackNodeIPs -ComponentSLIs -ConsistentHTTPGetHandlers -ConsistentListFromCache
    -CronJobTimeZone -CustomResourceValidationExpressions -DefaultHostNetworkHostPortsInPodTemplates
    -DevicePluginCDIDevices -DisableCloudProviders -DisableKubeletCloudCredentialProviders -DownwardAPIHugePages
    -ElasticIndexedJob -ExpandedDNSConfig -ExperimentalHostUserNamespaceDefaultingGate -GRPCContainerProbe
    -HPAContainerMetrics -IPTablesOwnershipCleanup -InTreePluginAWSUnregister -InTreePluginAzureDiskUnregister
    -InTreePluginAzureFileUnregister -InTreePluginGCEUnregister -InTreePluginOpenStackUnregister
    -InTreePluginRBDUnregister -InTreePluginvSphereUnregister -JobMutableNodeSchedulingDirectives -JobPodFailurePolicy
    -JobReadyPods -JobTrackingWithFinalizers -KMSv2 -KMSv2KDF -KubeProxyDrainingTerminatingNodes -KubeletPodResources
    -KubeletPodResourcesGetAllocatable -LegacyServiceAccountTokenCleanUp -LegacyServiceAccountTokenNoAutoGeneration
    -LegacyServiceAccountTokenTracking -MinDomainsInPodTopologySpread -MinimizeIPTablesRestore
    -MultiCIDRRangeAllocator -NewVolumeManagerReconstruction -NodeOutOfServiceVolumeDetach
    -PDBUnhealthyPodEvictionPolicy -PersistentVolumeLastPhaseTransitionTime -PodDisruptionConditions -PodHostIPs
    -ProbeTerminationGracePeriod -ProxyTerminatingEndpoints -ReadWriteOncePod -RemainingItemCount
    -RetroactiveDefaultStorageClass -SeccompDefault -SecurityContextDeny -ServiceNodePortStaticSubrange
    -SkipReadOnlyValidationGCE -StableLoadBalancerNodeSet -StatefulSetStartOrdinal -TopologyManager
    -ValidatingAdmissionPolicy -VolumeCapacityPriority
1.35: +AuthorizePodWebsocketUpgradeCreatePermission +CRDObservedGenerationTracking +CSIServiceAccountTokenSecrets
    +ChangeContainerStatusOnKubeletRestart +CloudControllerManagerWatchBasedRoutesReconciliation
    +ConstrainedImpersonation +DRADeviceTaintRules +GangScheduling +GenericWorkload +InOrderInformersBatchProcess
    +InPlacePodLevelResourcesVerticalScaling +MutablePVNodeAffinity +MutablePodResourcesForSuspendedJobs
    +MutableSchedulingDirectivesForSuspendedJobs +NodeDeclaredFeatures +OpportunisticBatching
    +RestartAllContainersOnContainerExits +StructuredAuthenticationConfigurationJWKSMetrics
    +TaintTolerationComparisonOperators +UserNamespacesHostNetworkSupport +VolumeLimitScaling
    -AllowServiceLBStatusOnNonLB -CronJobsScheduledAnnotation -InformerResourceVersion -LoadBalancerIPMode
    -PodIndexLabel -ProbeHostPodSecurityStandards -SizeMemoryBackedVolumes -StatefulSetAutoDeletePVC
    -UserNamespacesPodSecurityStandards
1.36: +AllowServiceExternalIPs +AtomicFIFO +CRIListStreaming +ClientsAllowCARotation +ClientsAllowTLSCacheGC
    +ControllerManagerReleaseLeaderElectionLockOnExit +DRAListTypeAttributes +DRANodeAllocatableResources
    +DRAResourceClaimGranularStatusAuthorization +DRAResourcePoolStatus +DRAWorkloadResourceClaims
    +DeclarativeValidationBeta +ExtendWebSocketsToKubelet +ImageVolumeWithDigest
    +InPlacePodVerticalScalingInitContainers +ManifestBasedAdmissionControlConfig +NativeHistograms
    +PLEGOnDemandRelist +PersistentVolumeClaimUnusedSinceTime +PodLevelResourceManagers +PodsAPI
    +ReloadKubeletClientCAFile +ResourceHealthStatusMessage +ServiceCIDRStatusFieldWiping +ShardedListAndWatch
    +StaleControllerConsistencyDaemonSet +StaleControllerConsistencyJob +StaleControllerConsistencyReplicaSet
    +StaleControllerConsistencyStatefulSet +TopologyAwareWorkloadScheduling +UnlockWhileProcessingFIFO
    +WorkloadAwarePreemption +WorkloadWithJob -CSIMigrationPortworx -CustomCPUCFSQuotaPeriod -DeclarativeValidation
    -DeclarativeValidationTakeover -HonorPVReclaimPolicy -InOrderInformers -InPlacePodVerticalScalingAllocatedStatus
    -InTreePluginPortworxUnregister -MemoryManager -MutatingAdmissionPolicy -ServiceTrafficDistribution
    -TopologyAwareHints
1.37: +APIServerWebhookAuthenticationToken +AtomicWriteVolumeUserFields +CompositePodGroup
    +ConsistentListFromCacheSkipTimeoutFallback +DRADerivedAttributes +DRADeviceCompatibilityGroups
    +DRAFractionalCapacityRange +DRAOptionalNodeOperations +DRAPartitionableDevicesType +DefaultPodSysctls
    +EmptyDirVolumeMode +EtcdRangeStream +EvictionRequestAPI +ExcludeAdmissionWebhookVirtualResources
    +GRPCContainerProbeTLS +H2CContainerProbe +HPAGeneration +HPAOptimizedSelectorStore +HugepageAwareEviction
    +InPlacePodVerticalScalingMemoryBackedVolumes +InPlacePodVerticalScalingSchedulerPreemption
    +InterPodAffinityHostnameFastPath +KubeProxyIPVS +KubeProxyNFTablesLocalhostNodePorts
    +KubeletAllocatedPodsEndpoint +NFTablesNetlink +NodeControllerLeaseCircuitBreaker +NodeLifecycleConditions
    +PodGroupPreemptionPolicy +PodLevelResourcesFixDefaulting +PodLevelResourcesFixKubeletQOSClass
    +SchedulerPreQueueingHints +StaleControllerConsistencyHPA +StatefulSetRecreateStrategy +VolumeBindMountOptions
    +WatchListCompression +WebhookRoundTripLoadBalancing -AnyVolumeDataSource -AuthorizeNodeWithSelectors
    -GangScheduling -JobBackoffLimitPerIndex -JobPodReplacementPolicy -JobSuccessPolicy -LogarithmicScaleDown
    -OrderedNamespaceDeletion -PodLifecycleSleepAction -PodLifecycleSleepActionAllowZero
    -PreventStaticPodAPIReferences -RelaxedDNSSearchValidation -SchedulerQueueingHints -SidecarContainers
    -StreamingCollectionEncodingToJSON -StreamingCollectionEncodingToProtobuf -WatchCacheInitializationPostStartHook
    -WorkloadAwarePreemption
"""


def _releases(changes: str) -> dict[str, tuple[str, ...]]:
    out: dict[str, tuple[str, ...]] = {}
    names: set[str] = set()
    for entry in changes.replace("\n    ", " ").splitlines():
        release, _, words = entry.partition(": ")
        for word in words.split():
            (names.add if word[0] == "+" else names.discard)(word[1:])
        out[release] = tuple(sorted(names))
    return out


RECORDED = _releases(_CHANGES)
