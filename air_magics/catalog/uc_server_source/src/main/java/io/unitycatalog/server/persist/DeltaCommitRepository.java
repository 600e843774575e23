package io.unitycatalog.server.persist;

import static java.sql.Connection.TRANSACTION_REPEATABLE_READ;

import io.unitycatalog.server.exception.BaseException;
import io.unitycatalog.server.exception.ErrorCode;
import io.unitycatalog.server.exception.TransactionRollbackException;
import io.unitycatalog.server.model.ColumnInfos;
import io.unitycatalog.server.model.DataSourceFormat;
import io.unitycatalog.server.model.DeltaCommit;
import io.unitycatalog.server.model.DeltaCommitInfo;
import io.unitycatalog.server.model.DeltaCommitMetadataProperties;
import io.unitycatalog.server.model.DeltaGetCommits;
import io.unitycatalog.server.model.DeltaGetCommitsResponse;
import io.unitycatalog.server.model.DeltaMetadata;
import io.unitycatalog.server.model.TableType;
import io.unitycatalog.server.persist.dao.ColumnInfoDAO;
import io.unitycatalog.server.persist.dao.DeltaCommitDAO;
import io.unitycatalog.server.persist.dao.PropertyDAO;
import io.unitycatalog.server.persist.dao.TableInfoDAO;
import io.unitycatalog.server.persist.utils.TransactionManager;
import io.unitycatalog.server.service.delta.DeltaUniformUtils;
import io.unitycatalog.server.service.delta.UcManagedDeltaContract;
import io.unitycatalog.server.utils.Constants;
import io.unitycatalog.server.utils.IdentityUtils;
import io.unitycatalog.server.utils.NormalizedURL;
import io.unitycatalog.server.utils.ServerProperties;
import io.unitycatalog.server.utils.ValidationUtils;
import jakarta.persistence.PessimisticLockException;
import java.util.Collections;
import java.util.Comparator;
import java.util.Date;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.UUID;
import java.util.stream.Collectors;
import org.hibernate.LockMode;
import org.hibernate.Session;
import org.hibernate.SessionFactory;
import org.hibernate.query.NativeQuery;
import org.hibernate.query.Query;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Repository for managing Delta commits for managed Delta tables in Unity Catalog.
 *
 * <p>The database table 'uc_delta_commits' has commits of all managed tables until the commits are
 * backfilled. However, there's a special case that in order to record the last commit even after
 * it's backfilled, UC does not delete the last commit but instead only mark it as
 * is_backfilled_latest_commit=true. So it's guaranteed that there would be at least one record (the
 * last commit) once the table is onboarded.
 *
 * <p>For example, consider the following sequence of commit operations:
 *
 * <ol>
 *   <li>commit(v1). Then database has [v1]
 *   <li>commit(v2). Then database has [v1, v2]
 *   <li>commit(v3). Then database has [v1, v2, v3]
 *   <li>backfill(v1). Then database has [v2, v3]. Any version &lt;= v1 is removed.
 *   <li>commit(v4) and backfill(v3). Then database has [v4]. Any version &lt;= v3 is removed.
 *   <li>commit (v5). Then database has [v4, v5]
 *   <li>backfill(v5). Then database has [v5(is_backfilled_latest_commit=true)]. v4 is removed. But
 *       v5 has to be kept as the last record in database.
 *   <li>commit(v6). Then database has [v5(is_backfilled_latest_commit=true), v6]
 * </ol>
 */
public class DeltaCommitRepository {

  /**
   * Thrown when a commit request is recognized as an idempotent replay of an already-accepted
   * commit, to roll the whole transaction back so nothing the request applied (the commit, and on
   * the Delta path any sibling metadata) is persisted; the commit entry point then catches it and
   * reports a no-op success.
   *
   * <p>Not a client-facing error, so it deliberately does not extend {@link BaseException}. As a
   * {@link TransactionRollbackException}, {@code TransactionManager} rolls back and rethrows it
   * as-is instead of wrapping it into an {@code INTERNAL} error; it is always caught within {@link
   * #postCommit} / {@link io.unitycatalog.server.persist.TableRepository#updateTableForDelta} and
   * never reaches the HTTP layer.
   */
  static class CommitAlreadyAcceptedException extends TransactionRollbackException {}

  private static final Logger LOGGER = LoggerFactory.getLogger(DeltaCommitRepository.class);

  /**
   * The maximum number of unbackfilled commits allowed per table before backfilling is required. In
   * real life unbackfilled commits per table should remain 1 or 2 almost all the time as the client
   * should implement proactive backfilling right after committing a version. This limit exist as a
   * safety measure just in case there's a problem in client implementation, or the table is being
   * committed heavily by different clients in rare cases. TODO: turn this into a configurable
   * server property.
   */
  private static final int MAX_NUM_COMMITS_PER_TABLE = 10;

  /**
   * The batch size limit for commit delete and select operations. This limit is set to be larger
   * than MAX_NUM_COMMITS_PER_TABLE so that it should never hit this limit at all. But it serves the
   * purpose of another safety measure to avoid a huge query execution IF both the server and client
   * are not implemented correct and commits per table grow unbounded. TODO: turn this into a
   * configurable server property.
   */
  private static final int NUM_COMMITS_PER_BATCH = 20;

  private final SessionFactory sessionFactory;
  private final ServerProperties serverProperties;

  public DeltaCommitRepository(SessionFactory sessionFactory, ServerProperties serverProperties) {
    this.sessionFactory = sessionFactory;
    this.serverProperties = serverProperties;
  }

  /**
   * Result of querying unbackfilled commits for a table.
   *
   * @param commits unbackfilled commits (descending version order, newest first)
   * @param latestTableVersion the latest commit version (0 if no commits)
   * @param oldestVersion the oldest commit version in the DB (used for pagination base)
   */
  record CommitQueryResult(
      List<DeltaCommitDAO> commits, long latestTableVersion, long oldestVersion) {}

  /**
   * Query unbackfilled commits for a table within an existing session. Returns commits in
   * descending version order (newest first) and the latest table version.
   *
   * <p>Handles empty tables (returns version 0) and fully backfilled tables (returns empty list
   * with correct version).
   */
  CommitQueryResult getUnbackfilledCommits(Session session, UUID tableId) {
    Query<DeltaCommitDAO> query =
        session.createQuery(
            "FROM DeltaCommitDAO WHERE tableId = :tableId ORDER BY commitVersion DESC",
            DeltaCommitDAO.class);
    query.setParameter("tableId", tableId);
    query.setMaxResults(NUM_COMMITS_PER_BATCH);
    List<DeltaCommitDAO> allDesc = query.list();

    if (allDesc.isEmpty()) {
      return new CommitQueryResult(List.of(), 0L, 0L);
    }

    int commitCount = allDesc.size();
    if (commitCount > MAX_NUM_COMMITS_PER_TABLE) {
      LOGGER.error(
          "Table {} has {} commits, exceeds limit {}.",
          tableId,
          commitCount,
          MAX_NUM_COMMITS_PER_TABLE);
    }

    DeltaCommitDAO newestCommit = allDesc.get(0);
    long latestVersion = newestCommit.getCommitVersion();
    long oldestVersion = allDesc.get(allDesc.size() - 1).getCommitVersion();
    if (newestCommit.isBackfilledLatestCommit()) {
      return new CommitQueryResult(List.of(), latestVersion, oldestVersion);
    }

    // Only the latest backfilled version is kept in the DB as a
    // marker (isBackfilledLatestCommit=true). All other backfilled
    // commits are deleted. Filter out this single marker.
    List<DeltaCommitDAO> unbackfilled =
        allDesc.stream().filter(c -> !c.isBackfilledLatestCommit()).toList();
    return new CommitQueryResult(unbackfilled, latestVersion, oldestVersion);
  }

  /**
   * Retrieves commits for a managed Delta table within a specified version range.
   *
   * <p>This method returns commits that fall within the requested version range [startVersion,
   * endVersion]. The response includes both the list of commits and the latest table version.
   *
   * <p><b>Pagination:</b> Results may be further reduced to MAX_NUM_COMMITS_PER_TABLE commits per
   * request if they exceed. Earlier (lower version) commits in the version range of [startVersion,
   * endVersion] will be kept and later (higher version) commits in the version range will be
   * trimmed in order to keep the result within the limit.
   *
   * <p><b>Backfilled commits:</b> When commits are backfilled (persisted to file storage), they are
   * removed from the database. If the latest commit is marked as backfilled, this method returns an
   * empty commit list but still returns the correct latestTableVersion.
   *
   * <p><b>Empty table behavior:</b> If the table has no commits yet, returns latestTableVersion=0
   * with an empty commit list.
   *
   * <p>The returned commits are ordered by version in descending order (newest first).
   */
  public DeltaGetCommitsResponse getCommits(DeltaGetCommits rpc) {
    serverProperties.checkManagedTableEnabled();

    ValidationUtils.checkArgument(rpc.getTableId() != null, "Field can not be null: table_id");
    ValidationUtils.checkArgument(
        rpc.getStartVersion() != null, "Field can not be null: start_version");
    UUID tableId = UUID.fromString(rpc.getTableId());
    long startVersion = rpc.getStartVersion();
    Optional<Long> endVersion = Optional.ofNullable(rpc.getEndVersion());
    ValidationUtils.checkArgument(startVersion >= 0, "Field must be >=0: start_version");
    ValidationUtils.checkArgument(
        endVersion.filter(x -> x < startVersion).isEmpty(),
        "end_version must be >=start_version if set");

    return TransactionManager.executeWithTransaction(
        sessionFactory,
        session -> {
          // Validate table exists and is managed Delta
          TableInfoDAO tableInfoDAO = session.get(TableInfoDAO.class, tableId);
          if (tableInfoDAO == null) {
            throw new BaseException(ErrorCode.TABLE_NOT_FOUND, "Table not found: " + tableId);
          }
          validateTable(tableInfoDAO);

          CommitQueryResult result = getUnbackfilledCommits(session, tableId);

          // Apply version range filter + pagination
          long paginatedEnd =
              Math.max(startVersion, result.oldestVersion()) + MAX_NUM_COMMITS_PER_TABLE - 1;
          long effectiveEnd = Math.min(endVersion.orElse(Long.MAX_VALUE), paginatedEnd);

          List<DeltaCommitInfo> commits =
              result.commits().stream()
                  .filter(
                      c ->
                          c.getCommitVersion() >= startVersion
                              && c.getCommitVersion() <= effectiveEnd)
                  .map(DeltaCommitDAO::toCommitInfo)
                  .collect(Collectors.toList());
          return new DeltaGetCommitsResponse()
              .commits(commits)
              .latestTableVersion(result.latestTableVersion());
        },
        "Failed to get commits",
        /* readOnly= */ true,
        Optional.of(TRANSACTION_REPEATABLE_READ));
  }

  /**
   * Commits a new version to a managed Delta table with coordinated commit semantics.
   *
   * <p>This method handles three types of commit operations:
   *
   * <ul>
   *   <li><b>Onboarding commit:</b> The first commit sent to Unity Catalog for this table
   *   <li><b>Normal commit:</b> A new version commit with optional backfill notification
   *   <li><b>Backfill-only commit:</b> No new version, only reports backfilled versions
   * </ul>
   *
   * <p>The method validates the commit, ensures the table is a managed Delta table, and performs
   * the appropriate commit operation within a transaction.
   *
   * <p>Replaying a commit already accepted for this table is an idempotent no-op success (not a
   * conflict), so a client that lost the response can safely resend. See {@link
   * #isAcceptedCommitReplay}.
   *
   * @param commit the commit request containing version info, metadata, and backfill information
   * @throws BaseException if the commit is invalid, table is not found, or commit limits are
   *     exceeded
   */
  public void postCommit(DeltaCommit commit) {
    try {
      postCommitInTransaction(commit);
    } catch (CommitAlreadyAcceptedException e) {
      // Idempotent replay: the transaction rolled back to a no-op. Report success.
    }
  }

  private void postCommitInTransaction(DeltaCommit commit) {
    serverProperties.checkManagedTableEnabled();
    validateCommit(commit);
    // Extract + shape-validate uniform fields outside the transaction. The subpath check (which
    // needs the table URL) happens later inside validateTableForCommit; everything else
    // uniform-related is settled here.
    Optional<DeltaUniformUtils.UniformIcebergFields> uniformFields =
        DeltaUniformUtils.getUniformFields(commit);
    TransactionManager.executeWithTransaction(
        sessionFactory,
        session -> {
          UUID tableId = UUID.fromString(commit.getTableId());
          TableInfoDAO tableInfoDAO = session.get(TableInfoDAO.class, tableId);
          if (tableInfoDAO == null) {
            throw new BaseException(
                ErrorCode.TABLE_NOT_FOUND, "Table not found: " + commit.getTableId());
          }
          // Serialize all commit/backfill mutations on this table by write-locking its uc_tables
          // row, matching the Delta update path. This makes the commit-log reads and writes below
          // atomic against a concurrent commit or backfill.
          lockTableForCommit(session, tableInfoDAO, tableId, Optional.empty());
          validateTableForCommit(session, commit, tableInfoDAO, uniformFields);
          postCommitCore(session, tableId, tableInfoDAO, commit, uniformFields);
          return null;
        },
        "Error committing to table: " + commit.getTableId(),
        /* readOnly = */ false);
  }

  /**
   * Acquire a {@code PESSIMISTIC_WRITE} lock on the table's {@code uc_tables} row so concurrent
   * CCv2 commit/backfill transactions on the same table serialize. Shared by both commit entry
   * points: UC REST {@code postCommit} and the Delta update path.
   *
   * <p>Call this before reading or mutating commit-log state (and, on the Delta path, before
   * snapshotting the etag): {@code session.refresh} reloads the row, so calling it after in-memory
   * DAO mutations would discard them.
   *
   * <p>A lock-wait timeout or deadlock surfaces as {@code UPDATE_REQUIREMENT_CONFLICT} (409) so the
   * client retries, rather than as a generic 500.
   */
  public static void lockTableForCommit(
      Session session, TableInfoDAO dao, UUID tableId, Optional<String> tableFullNameForLogging) {
    try {
      session.refresh(dao, LockMode.PESSIMISTIC_WRITE);
    } catch (PessimisticLockException e) {
      throw new BaseException(
          ErrorCode.UPDATE_REQUIREMENT_CONFLICT,
          "Concurrent commit in progress on table "
              + tableFullNameForLogging.orElseGet(tableId::toString)
              + "; retry the request.");
    }
  }

  /**
   * Shared core of {@link #postCommit} and {@link #applyCommitAndBackfillInSession}: read the
   * first/last commits and route to {@link #handleOnboardingCommit} (no prior commits + commit info
   * present), {@link #handleBackfillOnlyCommit} (prior commits + commit info absent), or {@link
   * #handleNormalCommit} (prior commits + commit info present). A backfill-only request against an
   * empty commit log is rejected here directly with a caller-aware message.
   *
   * <p>An idempotent replay is detected within {@link #handleNormalCommit}, which throws {@link
   * CommitAlreadyAcceptedException}.
   */
  private void postCommitCore(
      Session session,
      UUID tableId,
      TableInfoDAO tableInfoDAO,
      DeltaCommit commit,
      Optional<DeltaUniformUtils.UniformIcebergFields> uniformFields) {
    List<DeltaCommitDAO> firstAndLastCommits = getFirstAndLastCommits(session, tableId);
    if (firstAndLastCommits.isEmpty()) {
      if (commit.getCommitInfo() == null) {
        throw new BaseException(
            ErrorCode.INVALID_ARGUMENT,
            "Backfill request requires a prior commit; the table's commit log is empty.");
      }
      handleOnboardingCommit(session, tableId, tableInfoDAO, commit, uniformFields);
    } else {
      DeltaCommitDAO firstCommitDAO = firstAndLastCommits.get(0);
      DeltaCommitDAO lastCommitDAO = firstAndLastCommits.get(1);
      ValidationUtils.checkArgument(
          firstCommitDAO.getCommitVersion() <= lastCommitDAO.getCommitVersion(),
          "Inconsistent commit log: first commit version > last commit version.");
      if (commit.getCommitInfo() == null) {
        // latestBackfilledVersion non-null guaranteed upstream (UC REST: validateCommit;
        // Delta update: DeltaUpdateTableMapper checkNotNull).
        assert (commit.getLatestBackfilledVersion() != null);
        handleBackfillOnlyCommit(
            session,
            tableId,
            commit.getLatestBackfilledVersion(),
            firstCommitDAO.getCommitVersion(),
            lastCommitDAO.getCommitVersion());
      } else {
        handleNormalCommit(
            session, tableId, tableInfoDAO, commit, uniformFields, firstCommitDAO, lastCommitDAO);
      }
    }
  }

  /**
   * Handles an onboarding commit, which is the very first commit sent to Unity Catalog for a table.
   *
   * <p>An onboarding commit must include commit information (version, timestamp, file details) but
   * does not perform backfilling since there are no prior Unity Catalog-managed versions. This may
   * be the first commit since table creation, or the table may have had previous filesystem-only
   * commits. After this commit, Unity Catalog becomes the commit coordinator for the table.
   *
   * <p>The method saves the commit and optionally updates table metadata if provided.
   *
   * @param session the Hibernate session for database operations
   * @param tableId the unique identifier of the table being committed to
   * @param tableInfoDAO the table information data access object
   * @param commit the commit request containing version info and optional metadata
   * @throws BaseException if the commit info is null
   */
  private static void handleOnboardingCommit(
      Session session,
      UUID tableId,
      TableInfoDAO tableInfoDAO,
      DeltaCommit commit,
      Optional<DeltaUniformUtils.UniformIcebergFields> uniformFields) {
    DeltaCommitInfo commitInfo = commit.getCommitInfo();
    ValidationUtils.checkArgument(
        commitInfo != null,
        "Field can not be null: %s in onboarding commit",
        DeltaCommit.JSON_PROPERTY_COMMIT_INFO);
    saveCommit(session, tableId, commitInfo);
    updateTableFromCommit(session, tableId, tableInfoDAO, commit, uniformFields);
  }

  /**
   * Handles a commit request that only performs backfilling without adding a new commit version.
   *
   * <p>This method is called when a commit request has no commit info but specifies a backfilled
   * version. It validates that the backfilled version is not greater than the last committed
   * version, then delegates to the backfill logic to remove old commits from the repository.
   *
   * @param session the Hibernate session for database operations
   * @param tableId the unique identifier of the table
   * @param latestBackfilledVersion the version up to which backfilling has already been performed
   * @param firstCommitVersion the version number of the first commit currently in the database
   * @param lastCommitVersion the version number of the last commit currently in the database
   * @throws BaseException if the backfilled version is greater than the last commit version
   */
  private static void handleBackfillOnlyCommit(
      Session session,
      UUID tableId,
      long latestBackfilledVersion,
      long firstCommitVersion,
      long lastCommitVersion) {
    if (latestBackfilledVersion > lastCommitVersion) {
      throw new BaseException(
          ErrorCode.INVALID_ARGUMENT,
          String.format(
              "Should not backfill version %d while the last version committed is %d",
              latestBackfilledVersion, lastCommitVersion));
    }
    backfillCommits(
        session,
        tableId,
        latestBackfilledVersion,
        firstCommitVersion,
        lastCommitVersion,
        Optional.empty());
  }

  /**
   * Apply commit-log changes (add-commit and/or set-latest-backfilled-version) for the Delta
   * update-table endpoint, going through the shared {@link #postCommitCore} so the commit-log
   * progression is identical to {@link #postCommit}. Differs from {@code postCommit} on three
   * points:
   *
   * <ul>
   *   <li>does not open its own transaction -- the caller ({@link
   *       io.unitycatalog.server.persist.TableRepository}) holds it;
   *   <li>does not validate table-URI equality -- the Delta endpoint resolves the table by name and
   *       id;
   *   <li>does not project commit metadata onto the DAO -- the Delta path sends metadata changes as
   *       sibling {@code TableUpdate} actions which the mapper has already applied.
   * </ul>
   *
   * <p>The metadata-location subpath check on {@code uniformFields} runs here (the table location
   * comes from the DAO). Property/block-presence consistency is the responsibility of {@link
   * io.unitycatalog.server.service.delta.DeltaUpdateTableMapper#applyUpdates}, which runs against
   * the post-update {@link MutablePropertyMap} view; this method only sees the DAO.
   *
   * <p>Package-private because the only caller today is {@link
   * io.unitycatalog.server.persist.TableRepository}; widen the visibility once a second caller
   * needs it.
   *
   * @param session active Hibernate session owned by the caller's transaction.
   * @param dao the table to commit.
   * @param deltaCommitOpt the {@code add-commit} payload, if any; converted internally to the UC
   *     {@link DeltaCommitInfo} shape before dispatch.
   * @param uniformFields extracted + shape-validated UniForm-Iceberg fields from the same {@code
   *     add-commit}, if any; must be empty when {@code deltaCommitOpt} is empty.
   * @param latestBackfilledVersion the {@code set-latest-backfilled-version} target, if any. Same
   *     value as the Delta wire field {@code latest-published-version}. When paired with {@code
   *     deltaCommitOpt}, the helper runs both in one read of the commit log.
   */
  void applyCommitAndBackfillInSession(
      Session session,
      TableInfoDAO dao,
      Optional<DeltaCommitInfo> commitInfoOpt,
      Optional<DeltaUniformUtils.UniformIcebergFields> uniformFields,
      Optional<Long> latestBackfilledVersion) {
    ValidationUtils.checkArgument(
        commitInfoOpt.isPresent() || latestBackfilledVersion.isPresent(),
        "At least one of add-commit or set-latest-backfilled-version is required.");
    if (uniformFields.isPresent() && commitInfoOpt.isEmpty()) {
      throw new BaseException(
          ErrorCode.INVALID_ARGUMENT, "Uniform metadata requires an accompanying commit.");
    }
    serverProperties.checkManagedTableEnabled();
    uniformFields.ifPresent(
        uf ->
            DeltaUniformUtils.requireMetadataLocationSubpath(
                uf.metadataLocation(), NormalizedURL.from(dao.getUrl())));
    // Same per-field commit-info check as the UC REST validateCommit path.
    commitInfoOpt.ifPresent(DeltaCommitRepository::validateCommitInfo);
    postCommitCore(
        session,
        dao.getId(),
        dao,
        new DeltaCommit()
            .commitInfo(commitInfoOpt.orElse(null))
            .latestBackfilledVersion(latestBackfilledVersion.orElse(null)),
        uniformFields);
  }

  /**
   * Handles a normal commit operation that adds a new version to the table.
   *
   * <p>A normal commit is any commit after the initial onboarding commit. It must include commit
   * info and may optionally:
   *
   * <ul>
   *   <li>Report backfilled versions to trigger cleanup of old commits
   *   <li>Update table metadata (schema, properties, description)
   * </ul>
   *
   * <p>The method validates that:
   *
   * <ul>
   *   <li>The new version is greater than the current version
   *   <li>The new version is exactly the next version (no gaps)
   *   <li>The backfilled version (if provided) is valid
   *   <li>Adding the new commit won't exceed the maximum commits per table limit
   * </ul>
   *
   * <p>A resend of an already-accepted commit is detected here (see {@link
   * CommitAlreadyAcceptedException}); a non-matching commit at an already-taken version is a
   * genuine conflict.
   *
   * @param session the Hibernate session for database operations
   * @param tableId the unique identifier of the table
   * @param tableInfoDAO the table information data access object
   * @param commit the commit request containing version info, optional backfill, and metadata
   * @param firstCommitDAO the first commit already in the database
   * @param lastCommitDAO the last commit already in the database
   * @throws CommitAlreadyAcceptedException if this is an idempotent replay of an accepted commit
   * @throws BaseException if the commit version is invalid, already exists, or violates constraints
   */
  private static void handleNormalCommit(
      Session session,
      UUID tableId,
      TableInfoDAO tableInfoDAO,
      DeltaCommit commit,
      Optional<DeltaUniformUtils.UniformIcebergFields> uniformFields,
      DeltaCommitDAO firstCommitDAO,
      DeltaCommitDAO lastCommitDAO) {
    DeltaCommitInfo commitInfo = Objects.requireNonNull(commit.getCommitInfo());
    long firstCommitVersion = firstCommitDAO.getCommitVersion();
    long lastCommitVersion = lastCommitDAO.getCommitVersion();
    long newCommitVersion = commitInfo.getVersion();
    if (newCommitVersion <= lastCommitVersion) {
      if (isAcceptedCommitReplay(
          session,
          tableId,
          newCommitVersion,
          commitInfo.getFileName(),
          firstCommitDAO,
          lastCommitDAO)) {
        // A replay of an already-accepted commit.
        throw new CommitAlreadyAcceptedException();
      }
      // A non-matching commit at an already-taken version is a genuine conflict.
      throw new BaseException(
          ErrorCode.COMMIT_VERSION_CONFLICT,
          "Commit version already accepted. Current table version is " + lastCommitVersion);
    }
    if (newCommitVersion > lastCommitVersion + 1) {
      throw new BaseException(
          ErrorCode.INVALID_ARGUMENT,
          String.format(
              "Commit version must be the next version after the latest commit %d, but got %d",
              lastCommitVersion, newCommitVersion));
    }
    // getLatestBackfilledVersion may or may not be null because normal commit may or may
    // not notify a backfill in the same request
    Optional<Long> latestBackfilledVersion =
        Optional.ofNullable(commit.getLatestBackfilledVersion());
    if (latestBackfilledVersion.filter(x -> x > lastCommitVersion).isPresent()) {
      throw new BaseException(
          ErrorCode.INVALID_ARGUMENT,
          String.format(
              "Latest backfilled version %d cannot be greater than the last commit version = %d",
              latestBackfilledVersion.get(), lastCommitVersion));
    }
    checkCommitLimit(
        tableId, newCommitVersion, latestBackfilledVersion, firstCommitDAO, lastCommitDAO);
    saveCommit(session, tableId, commitInfo);
    updateTableFromCommit(session, tableId, tableInfoDAO, commit, uniformFields);
    latestBackfilledVersion.ifPresent(
        latestBackfilled ->
            backfillCommits(
                session,
                tableId,
                latestBackfilled,
                firstCommitVersion,
                lastCommitVersion,
                Optional.of(newCommitVersion)));
  }

  /**
   * Calculates the would-be backfilled version AFTER the current commit request is completed. This
   * considers the current state of commits and any backfill information in the request.
   *
   * <p>The logic handles several cases:
   *
   * <ul>
   *   <li>If the last commit is already marked as backfilled, it remains the backfilled version
   *   <li>If the request specifies a valid backfilled version >= first commit, use that
   *   <li>If the first commit is marked as backfilled, use its version
   *   <li>Otherwise, nothing is backfilled yet (returns firstCommitVersion - 1)
   * </ul>
   *
   * @param tableId the unique identifier of the table (used for logging)
   * @param latestBackfilledVersion optional backfilled version specified in the commit request
   * @param firstCommitDAO the first commit currently in the database with the lowest version
   * @param lastCommitDAO the last commit currently in the database with the highest version
   * @return the effective backfilled version after the commit operation completes
   */
  private static long getEffectiveBackfilledVersion(
      UUID tableId,
      Optional<Long> latestBackfilledVersion,
      DeltaCommitDAO firstCommitDAO,
      DeltaCommitDAO lastCommitDAO) {
    if (lastCommitDAO.isBackfilledLatestCommit()) {
      // There should only be ONE commit if the last one is marked as backfilled which is the
      // special case.
      if (firstCommitDAO.getCommitVersion() != lastCommitDAO.getCommitVersion()) {
        // This means a bug in this implementation, but recoverable.
        LOGGER.error(
            "Table: {}. Latest commit is marked backfilled but there are {} commits.",
            tableId,
            lastCommitDAO.getCommitVersion() - firstCommitDAO.getCommitVersion() + 1);
      }
      // In this case:
      // 1. If the request wants to commit a newer version, it cannot possibly backfill the same
      // newer version in the same request. So the last backfilled version remains the same.
      // 2. If by any means the request still wants to report backfilled version in this request,
      // it must be <= lastCommit. So it's the same result.
      return lastCommitDAO.getCommitVersion();
    } else if (latestBackfilledVersion
        .filter(x -> x >= firstCommitDAO.getCommitVersion())
        .isPresent()) {
      // The commit request reports a valid backfilled version. We'll take that.
      return latestBackfilledVersion.get();
    } else if (firstCommitDAO.isBackfilledLatestCommit()) {
      // The firstCommit is already backfilled. It remains only because it was the only commit
      // left when being backfilled.
      return firstCommitDAO.getCommitVersion();
    } else {
      // Otherwise, nothing in [first, last] is/will be backfilled.
      return firstCommitDAO.getCommitVersion() - 1L;
    }
  }

  /**
   * Validates that adding the new commit will not exceed the maximum number of commits allowed per
   * table after the commit (and backfill if any) is finished.
   *
   * @param tableId the unique identifier of the table
   * @param newCommitVersion the version number of the new commit being added
   * @param latestBackfilledVersion optional backfilled version specified in the commit request
   * @param firstCommitDAO the first commit currently in the database with the lowest version
   * @param lastCommitDAO the last commit currently in the database with the highest version
   * @throws BaseException if the commit would exceed the maximum commits per table limit
   */
  private static void checkCommitLimit(
      UUID tableId,
      long newCommitVersion,
      Optional<Long> latestBackfilledVersion,
      DeltaCommitDAO firstCommitDAO,
      DeltaCommitDAO lastCommitDAO) {
    long effectiveBackfilledVersion =
        getEffectiveBackfilledVersion(
            tableId, latestBackfilledVersion, firstCommitDAO, lastCommitDAO);
    long expectedFirstCommitVersionAfterBackfill = effectiveBackfilledVersion + 1L;
    long expectedCommitCountPostCommit =
        newCommitVersion - expectedFirstCommitVersionAfterBackfill + 1L;
    if (expectedCommitCountPostCommit > MAX_NUM_COMMITS_PER_TABLE) {
      throw new BaseException(
          ErrorCode.RESOURCE_EXHAUSTED, "Max number of commits per table reached: " + tableId);
    }
  }

  /**
   * Performs the backfilling operation by deleting old commits up to the specified version. The
   * most recent commit is always preserved as it serves as an indicator of the current table
   * version.
   *
   * <p>For backfill-only requests (when newCommitVersion is empty), if the backfilled version
   * equals the last commit version, that commit is marked as backfilled rather than deleted.
   *
   * <p>This method performs deletions in batches and retries up to 5 times if not all commits are
   * deleted, logging errors for investigation.
   *
   * @param session the Hibernate session for database operations
   * @param tableId the unique identifier of the table
   * @param latestBackfilledVersion the version up to which backfilling should be performed
   * @param firstCommitVersion the version number of the first commit currently in the database with
   *     the lowest version number
   * @param lastCommitVersion the version number of the last commit currently in the database with
   *     the highest version number
   * @param newCommitVersion optional new commit version being added (empty for backfill-only
   *     requests)
   */
  private static void backfillCommits(
      Session session,
      UUID tableId,
      long latestBackfilledVersion,
      long firstCommitVersion,
      long lastCommitVersion,
      Optional<Long> newCommitVersion) {
    // These asserts are already validated before calling this function
    assert latestBackfilledVersion <= lastCommitVersion;
    assert newCommitVersion.isEmpty() || newCommitVersion.get() == lastCommitVersion + 1;

    if (latestBackfilledVersion < firstCommitVersion) {
      // Backfilling a version that is already backfilled is fine. But no-op.
      return;
    }

    long highestCommitVersion = newCommitVersion.orElse(lastCommitVersion);
    // The last commit version, be it a new one or existing one, is never deleted.
    // It serves as an indicator of the current version.
    long deleteUpTo = Math.min(latestBackfilledVersion, highestCommitVersion - 1L);

    if (newCommitVersion.isEmpty() && latestBackfilledVersion == lastCommitVersion) {
      // Backfill only request will never delete the last existing commit. Instead, we mark it as
      // backfilled.
      markCommitAsLatestBackfilled(session, tableId, lastCommitVersion);
    }
    long numCommitsToDelete = deleteUpTo - firstCommitVersion + 1L;
    if (numCommitsToDelete <= 0) {
      // Nothing to delete.
      return;
    }

    // Retry backfilling 5 times to prioritize cleaning of the commit table and log bugs where there
    // are more commits in the table than MAX_NUM_COMMITS_PER_TABLE
    final int MAX_ITERATIONS = 5;
    for (int i = 0; i < MAX_ITERATIONS && numCommitsToDelete > 0; i++) {
      numCommitsToDelete -= deleteCommitsUpTo(session, tableId, deleteUpTo);
      if (numCommitsToDelete > 0) {
        LOGGER.error(
            "Failed to backfill commits for tableId: {}, upTo: {}, in batch: {}, commits left: {}",
            tableId,
            deleteUpTo,
            i,
            numCommitsToDelete);
      }
    }
  }

  /**
   * Persists a new commit record to the database.
   *
   * <p>Converts the commit info into a data access object and saves it to the commit repository.
   * This record includes the version number, timestamp, and file metadata for the commit.
   *
   * @param session the Hibernate session for database operations
   * @param tableId the unique identifier of the table
   * @param commitInfo the commit information containing version, timestamp, and file details
   */
  private static void saveCommit(Session session, UUID tableId, DeltaCommitInfo commitInfo) {
    DeltaCommitDAO deltaCommitDAO = DeltaCommitDAO.from(tableId, commitInfo);
    session.persist(deltaCommitDAO);
  }

  /**
   * Whether this {@code add-commit} at {@code version} is a replay of a commit already accepted for
   * this table, rather than a fresh commit or a genuine conflict at an already-taken version. A
   * client that lost the response to an accepted commit may safely resend the whole request;
   * recognizing the replay lets the server report success instead of a spurious conflict.
   *
   * <p>Covers only versions still tracked in the DB; a replay of a backfilled-and-purged version is
   * conservatively reported as not-a-replay. The caller must hold the table lock (see {@link
   * #lockTableForCommit}).
   *
   * <p>Filename with the client-generated, per-commit-unique UUID is used for dedup.
   *
   * @return {@code true} only if this matches an already-accepted commit; {@code false} for a fresh
   *     version, a genuine conflict, or a purged version
   */
  private static boolean isAcceptedCommitReplay(
      Session session,
      UUID tableId,
      long version,
      String fileName,
      DeltaCommitDAO firstCommitDAO,
      DeltaCommitDAO lastCommitDAO) {
    // Resolve the commit tracked at `version` against the caller's already-read boundary commits,
    // querying the DB only for a version strictly between them (never re-reading the whole log).
    DeltaCommitDAO existing;
    if (version == lastCommitDAO.getCommitVersion()) {
      existing = lastCommitDAO;
    } else if (version == firstCommitDAO.getCommitVersion()) {
      existing = firstCommitDAO;
    } else if (version > firstCommitDAO.getCommitVersion()
        && version < lastCommitDAO.getCommitVersion()) {
      // Tracked commit versions are contiguous between the boundaries. The caller holds the table
      // write lock, so no concurrent backfill can purge this version between reading the boundaries
      // and this lookup; an in-range version must therefore have a row. A missing row means the
      // uc_delta_commits table is internally inconsistent (a gap in the tracked range).
      existing =
          findCommitByVersion(session, tableId, version)
              .orElseThrow(
                  () ->
                      new BaseException(
                          ErrorCode.INTERNAL,
                          "Inconsistent uc_delta_commits table for table "
                              + tableId
                              + ": no row tracked at in-range commit version "
                              + version));
    } else {
      // Below the oldest tracked version, i.e. backfilled and purged. This could be a genuine
      // replay, but the file name is no longer stored, so we can't confirm it. Conservatively
      // treat it as a conflict.
      // TODO: close this gap by comparing the incoming staged file against the published
      // _delta_log/<v>.json.
      return false;
    }
    // The file name embeds a client-generated, per-commit-unique UUID, used as the dedup handle: a
    // match means the same commit replayed; a difference means another writer won that version.
    return existing.getCommitFilename().equals(fileName);
  }

  /**
   * Looks up the commit tracked at a specific version of a table, or empty if none. At most one row
   * can match, per the {@code (table_id, commit_version)} unique constraint on {@link
   * DeltaCommitDAO}.
   */
  private static Optional<DeltaCommitDAO> findCommitByVersion(
      Session session, UUID tableId, long commitVersion) {
    Query<DeltaCommitDAO> query =
        session.createQuery(
            "FROM DeltaCommitDAO WHERE tableId = :tableId AND commitVersion = :commitVersion",
            DeltaCommitDAO.class);
    query.setParameter("tableId", tableId);
    query.setParameter("commitVersion", commitVersion);
    return query.uniqueResultOptional();
  }

  /**
   * Deletes commits up to and including the specified version.
   *
   * <p>This method executes a batch delete operation limited by {@code NUM_COMMITS_PER_BATCH}. If
   * more commits need to be deleted than the batch size, this method should be called multiple
   * times.
   *
   * @param session the Hibernate session for database operations
   * @param tableId the unique identifier of the table
   * @param upToCommitVersion the version number up to which commits should be deleted (inclusive)
   * @return the number of commits actually deleted in this batch
   */
  private static int deleteCommitsUpTo(Session session, UUID tableId, long upToCommitVersion) {
    NativeQuery<?> query =
        session.createNativeQuery(
            buildBatchDeleteQuery("table_id = :tableId AND commit_version <= :upToCommitVersion"));
    query.setParameter("tableId", tableId);
    query.setParameter("upToCommitVersion", upToCommitVersion);
    query.setParameter("numCommitsPerBatch", NUM_COMMITS_PER_BATCH);
    return query.executeUpdate();
  }

  /**
   * Deletes commits for the specified table in a single batch.
   *
   * <p>Unlike {@link #deleteCommitsUpTo(Session, UUID, long)}, this method deletes any commits for
   * the table without version filtering. The operation is limited by {@code NUM_COMMITS_PER_BATCH}.
   * Used primarily during table deletion to purge all commit history.
   *
   * @param session the Hibernate session for database operations
   * @param tableId the unique identifier of the table
   * @return the number of commits actually deleted in this batch
   */
  private static int deleteCommits(Session session, UUID tableId) {
    NativeQuery<?> query = session.createNativeQuery(buildBatchDeleteQuery("table_id = :tableId"));
    query.setParameter("tableId", tableId);
    query.setParameter("numCommitsPerBatch", NUM_COMMITS_PER_BATCH);
    return query.executeUpdate();
  }

  /**
   * Builds a batch DELETE that avoids DELETE...LIMIT, which PostgreSQL does not support: an inner
   * SELECT picks up to :numCommitsPerBatch matching ids and the DELETE removes those ids.
   *
   * <p>The inner SELECT is wrapped in a derived table ({@code batch_to_delete}) purely for MySQL:
   * MySQL rejects both LIMIT directly inside an IN(...) subquery (error 1235) and a subquery that
   * selects from the table being deleted from (error 1093). The wrapper materializes the ids into a
   * temp table first, which sidesteps both. Do not flatten it to a single subquery — the H2 and
   * PostgreSQL tests will still pass, but MySQL will fail at runtime.
   */
  private static String buildBatchDeleteQuery(String whereClause) {
    return "DELETE FROM uc_delta_commits WHERE id IN ("
        + "SELECT id FROM (SELECT id FROM uc_delta_commits "
        + "WHERE "
        + whereClause
        + " "
        + "LIMIT :numCommitsPerBatch) AS batch_to_delete)";
  }

  /**
   * Marks a specific commit as the latest backfilled commit. This is used when a backfill-only
   * request backfills up to and including the last existing commit, which must be preserved.
   *
   * @param session the Hibernate session for database operations
   * @param tableId the unique identifier of the table
   * @param commitVersion the version number of the commit to mark as backfilled
   */
  private static void markCommitAsLatestBackfilled(
      Session session, UUID tableId, long commitVersion) {
    NativeQuery<?> query =
        session.createNativeQuery(
            "UPDATE uc_delta_commits SET is_backfilled_latest_commit = true WHERE table_id = :tableId "
                + "AND commit_version = :commitVersion");
    query.setParameter("tableId", tableId);
    query.setParameter("commitVersion", commitVersion);
    query.executeUpdate();
  }

  /**
   * Retrieves the first and last commits in database for a table ordered by version number.
   *
   * <p>The first commit is the commit in database with the lowest version number.
   *
   * <p>The last commit is the commit in database with the highest version number.
   *
   * <p>They may or may not be marked as backfilled already. But this function never count any of
   * the commits that are deleted by backfillCommits() since they are no longer in database.
   *
   * <p>Uses a UNION ALL query to efficiently fetch both boundary commits in a single database
   * operation. The results are sorted to ensure consistent ordering.
   *
   * <p>Return value interpretation:
   *
   * <ul>
   *   <li>Empty list: no commits exist for this table
   *   <li>List with two identical commits: only one commit exists (returned twice for consistency)
   *   <li>List with two different commits: [firstCommit, lastCommit] by version number
   * </ul>
   *
   * @param session the Hibernate session for database operations
   * @param tableId the unique identifier of the table
   * @return a list containing the first and last commits, empty if no commits exist
   */
  private List<DeltaCommitDAO> getFirstAndLastCommits(Session session, UUID tableId) {
    // Use native SQL to get the first and last commits since HQL doesn't support UNION ALL.
    // UNION ALL makes sure TWO rows are returned as long as there's any commit, even if there's
    // only one commit in table.
    String sql =
        "(SELECT * FROM uc_delta_commits WHERE table_id = :tableId "
            + "ORDER BY commit_version ASC LIMIT 1) "
            + "UNION ALL "
            + "(SELECT * FROM uc_delta_commits WHERE table_id = :tableId "
            + "ORDER BY commit_version DESC LIMIT 1)";
    Query<DeltaCommitDAO> query = session.createNativeQuery(sql, DeltaCommitDAO.class);
    query.setParameter("tableId", tableId);
    List<DeltaCommitDAO> result = query.getResultList();
    // Sort to ensure the first commit is at index 0
    result.sort(Comparator.comparing(DeltaCommitDAO::getCommitVersion));
    return result;
  }

  /**
   * Updates table with metadata and uniform information from a commit, then persists changes.
   *
   * @param session the Hibernate session for database operations
   * @param tableId the unique identifier of the table
   * @param tableInfoDAO the table information data access object to update
   * @param commit the commit request containing optional metadata and uniform information
   */
  private static void updateTableFromCommit(
      Session session,
      UUID tableId,
      TableInfoDAO tableInfoDAO,
      DeltaCommit commit,
      Optional<DeltaUniformUtils.UniformIcebergFields> uniformFields) {
    boolean hasUpdates = false;

    if (commit.getMetadata() != null) {
      updateTableMetadata(session, tableId, tableInfoDAO, commit.getMetadata());
      hasUpdates = true;
    }

    if (uniformFields.isPresent()) {
      DeltaUniformUtils.applyToDao(tableInfoDAO, uniformFields);
      hasUpdates = true;
    }

    if (hasUpdates) {
      String callerId = IdentityUtils.findPrincipalEmailAddress();
      tableInfoDAO.setUpdatedBy(callerId);
      tableInfoDAO.setUpdatedAt(new Date());
      session.merge(tableInfoDAO);
    }
  }

  /**
   * Updates table metadata including properties, schema (columns), and description based on the
   * metadata provided in a commit. This method handles:
   *
   * <ul>
   *   <li>Properties: Replaces all existing properties with new ones
   *   <li>Schema: Replaces all existing columns with new ones
   *   <li>Description: Updates the table comment
   * </ul>
   *
   * <p>The table's updated_at and updated_by fields are also refreshed.
   *
   * @param session the Hibernate session for database operations
   * @param tableId the unique identifier of the table
   * @param tableInfoDAO the table information data access object to update
   * @param metadata the metadata containing properties, schema, and/or description updates
   */
  private static void updateTableMetadata(
      Session session, UUID tableId, TableInfoDAO tableInfoDAO, DeltaMetadata metadata) {
    if (metadata.getProperties() != null) {
      // Update properties. They aren't part of TableInfoDAO so they'll do a separate update.
      PropertyRepository.findProperties(session, tableId, Constants.TABLE).forEach(session::remove);
      session.flush();
      PropertyDAO.from(metadata.getProperties().getProperties(), tableId, Constants.TABLE)
          .forEach(session::persist);
    }

    if (metadata.getSchema() != null) {
      // Update columns - clear existing and add new to trigger orphan removal
      List<ColumnInfoDAO> newColumns = ColumnInfoDAO.fromList(metadata.getSchema().getColumns());
      tableInfoDAO.getColumns().clear();
      session.flush(); // Flush to ensure old columns are deleted before adding new ones
      newColumns.forEach(
          c -> {
            c.setId(UUID.randomUUID());
            c.setTable(tableInfoDAO);
          });
      tableInfoDAO.getColumns().addAll(newColumns);
    }

    if (metadata.getDescription() != null) {
      // Update comment
      tableInfoDAO.setComment(metadata.getDescription());
    }
  }

  /**
   * Validates the structure and content of a commit request.
   *
   * <p>This method performs comprehensive validation including:
   *
   * <ul>
   *   <li>Table ID and URI must be non-null and non-empty
   *   <li>If commit info is present: validates version, timestamp, file name, file size, and file
   *       modification timestamp are positive/non-empty
   *   <li>If metadata is present: ensures at least one of description, properties, or schema is set
   *   <li>If metadata properties are present: validates that table ID property matches the commit's
   *       table ID
   *   <li>If commit info is absent: ensures this is a valid backfill-only commit with backfilled
   *       version set
   * </ul>
   *
   * @param commit the commit request to validate
   * @throws BaseException if any validation rule is violated
   */
  private static void validateCommit(DeltaCommit commit) {
    // Validate the commit object
    ValidationUtils.checkArgument(
        commit.getTableId() != null && !commit.getTableId().isEmpty(),
        "Field can not be empty: %s",
        DeltaCommit.JSON_PROPERTY_TABLE_ID);
    ValidationUtils.checkArgument(
        commit.getTableUri() != null && !commit.getTableUri().isEmpty(),
        "Field can not be empty: %s",
        DeltaCommit.JSON_PROPERTY_TABLE_URI);

    // Validate the commit info object
    if (commit.getCommitInfo() != null) {
      validateCommitInfo(commit.getCommitInfo());
      if (commit.getMetadata() != null) {
        DeltaMetadata metadata = commit.getMetadata();
        Optional<Map<String, String>> propertiesOpt =
            Optional.ofNullable(metadata.getProperties())
                .map(DeltaCommitMetadataProperties::getProperties);
        boolean hasProperties = propertiesOpt.map(p -> !p.isEmpty()).orElse(false);
        boolean hasSchema =
            Optional.ofNullable(metadata.getSchema())
                .map(ColumnInfos::getColumns)
                .map(c -> !c.isEmpty())
                .orElse(false);

        if (metadata.getDescription() == null && !hasProperties && !hasSchema) {
          // metadata should only be set when there is an actual change in metadata.
          throw new BaseException(
              ErrorCode.INVALID_ARGUMENT,
              "At least one of description, properties, or schema must be set in commit.metadata");
        }
        if (propertiesOpt.isPresent()) {
          UcManagedDeltaContract.validateTableIdProperty(propertiesOpt.get(), commit.getTableId());
        }
      }
    } else {
      // If commit info is null, then it should be a backfill only commit
      if (commit.getLatestBackfilledVersion() == null) {
        throw new BaseException(
            ErrorCode.INVALID_ARGUMENT,
            "Either commit_info or latest_backfilled_version must be defined");
      }
      if (commit.getMetadata() != null) {
        throw new BaseException(
            ErrorCode.INVALID_ARGUMENT, "metadata shouldn't be set for backfill only commit");
      }
    }
  }

  /**
   * Validates the 5 required fields of a commit-info block (version, timestamp, file name, file
   * size, file modification timestamp). Shared by {@link #validateCommit} (UC REST) and {@link
   * #applyCommitAndBackfillInSession} (Delta update path, via {@code toUcCommitInfo} first).
   */
  private static void validateCommitInfo(DeltaCommitInfo commitInfo) {
    ValidationUtils.checkArgument(
        commitInfo.getVersion() != null && commitInfo.getVersion() > 0,
        "Field must be positive: %s",
        DeltaCommitInfo.JSON_PROPERTY_VERSION);
    ValidationUtils.checkArgument(
        commitInfo.getTimestamp() != null && commitInfo.getTimestamp() > 0,
        "Field must be positive: %s",
        DeltaCommitInfo.JSON_PROPERTY_TIMESTAMP);
    ValidationUtils.checkArgument(
        commitInfo.getFileName() != null && !commitInfo.getFileName().isEmpty(),
        "Field can not be empty: %s",
        DeltaCommitInfo.JSON_PROPERTY_FILE_NAME);
    ValidationUtils.checkArgument(
        commitInfo.getFileSize() != null && commitInfo.getFileSize() > 0,
        "Field must be positive: %s",
        DeltaCommitInfo.JSON_PROPERTY_FILE_SIZE);
    ValidationUtils.checkArgument(
        commitInfo.getFileModificationTimestamp() != null
            && commitInfo.getFileModificationTimestamp() > 0,
        "Field must be positive: %s",
        DeltaCommitInfo.JSON_PROPERTY_FILE_MODIFICATION_TIMESTAMP);
  }

  /**
   * Validates that a table is eligible for Delta commits.
   *
   * <p>For a table to support Delta commits, it must:
   *
   * <ul>
   *   <li>Be a managed table (not external)
   *   <li>Use the Delta data source format
   *   <li>Have a valid URI/URL defined
   * </ul>
   *
   * @param tableInfoDAO the table information data access object to validate
   * @throws BaseException if the table doesn't meet requirements for Delta commits
   */
  private static void validateTable(TableInfoDAO tableInfoDAO) {
    ValidationUtils.checkArgument(
        tableInfoDAO.getType() != null
            && tableInfoDAO.getType().equals(TableType.MANAGED.toString()),
        "Only managed tables are supported for Delta commits");
    ValidationUtils.checkArgument(
        tableInfoDAO.getDataSourceFormat() != null
            && tableInfoDAO.getDataSourceFormat().equals(DataSourceFormat.DELTA.toString()),
        "Only delta tables are supported for Delta commits");
    if (tableInfoDAO.getUrl() == null) {
      throw new BaseException(
          ErrorCode.DATA_LOSS, "Managed table doesn't have a URI: " + tableInfoDAO.getId());
    }
  }

  /**
   * Validate that the table is eligible for the commit and the commit's table URI matches.
   *
   * <ul>
   *   <li>Table eligibility ({@link #validateTable}: MANAGED + DELTA + non-null URL).
   *   <li>Table URI equality: the URI in the commit must match the registered table URL after
   *       normalization.
   *   <li>UniForm subpath: when {@code uniformFields} is present, its {@code metadata-location}
   *       must be a subpath of the table's storage root.
   *   <li>UniForm property/block consistency via {@link #validateUniformMetadataPresence}.
   * </ul>
   *
   * <p>{@code uniformFields} is the already-validated, already-normalized output of {@link
   * DeltaUniformUtils#getUniformFields(DeltaCommit)}; this method only does the table-aware checks.
   */
  private static void validateTableForCommit(
      Session session,
      DeltaCommit commit,
      TableInfoDAO tableInfoDAO,
      Optional<DeltaUniformUtils.UniformIcebergFields> uniformFields) {
    validateTable(tableInfoDAO);
    NormalizedURL commitTableUri = NormalizedURL.from(commit.getTableUri());
    NormalizedURL tableUri = NormalizedURL.from(tableInfoDAO.getUrl());
    ValidationUtils.checkArgument(
        commitTableUri.equals(tableUri),
        "Table URI in commit %s does not match the table path %s",
        commit.getTableUri(),
        tableInfoDAO.getUrl());
    uniformFields.ifPresent(
        uf -> DeltaUniformUtils.requireMetadataLocationSubpath(uf.metadataLocation(), tableUri));
    validateUniformMetadataPresence(session, commit, tableInfoDAO);
  }

  /**
   * Validates the presence of uniform metadata inside commit. If the table has UniForm enabled
   * after incoming commit, uniform metadata must exist inside commit Otherwise, if the table
   * doesn't have UniForm enabled after incoming commit, uniform metadata must not exist inside
   * commit
   *
   * @param session the Hibernate session for database operations
   * @param commit the commit request that may contain uniform metadata
   * @param tableInfoDAO the table information data access object
   * @throws BaseException if validation is violated
   */
  private static void validateUniformMetadataPresence(
      Session session, DeltaCommit commit, TableInfoDAO tableInfoDAO) {
    Map<String, String> effectiveProperties;
    // When properties are not null inside commit metadata, the incoming commit would update
    // table properties
    if (commit.getMetadata() != null && commit.getMetadata().getProperties() != null) {
      effectiveProperties =
          Optional.ofNullable(commit.getMetadata().getProperties().getProperties())
              .orElse(Collections.emptyMap());
    } else {
      // Incoming commit doesn't update table properties. Get current table properties from database
      List<PropertyDAO> properties =
          PropertyRepository.findProperties(session, tableInfoDAO.getId(), Constants.TABLE);
      effectiveProperties = PropertyDAO.toMap(properties);
    }
    DeltaUniformUtils.validateConsistency(effectiveProperties, commit.getUniform() != null);
  }

  /**
   * Permanently deletes all commits associated with a table. This method is called when a table is
   * being deleted.
   *
   * <p>The method performs batch deletions with retries to handle tables that may have accumulated
   * more commits than the normal limit. It logs errors if the deletion exceeds expected thresholds
   * or fails to complete.
   *
   * @param session the Hibernate session for database operations
   * @param tableId the unique identifier of the table whose commits should be deleted
   */
  public void permanentlyDeleteTableCommits(Session session, UUID tableId) {
    // In case some tables got more commits than allowed, we still want to purge the commits
    // aggressively, so we allow 10x factor here. We also cap the number of iterations at 100 for
    // safety measures in case the constants are changed.
    int MAX_ITERATIONS = Math.min(100, MAX_NUM_COMMITS_PER_TABLE * 10 / NUM_COMMITS_PER_BATCH);
    boolean allDeleted = false;
    int numDeleted = 0;
    for (int i = 0; i < MAX_ITERATIONS; i++) {
      int deleted = deleteCommits(session, tableId);
      numDeleted += deleted;
      if (deleted < NUM_COMMITS_PER_BATCH) {
        allDeleted = true;
        break;
      }
    }
    if (numDeleted > MAX_NUM_COMMITS_PER_TABLE) {
      LOGGER.error(
          "Purged {} commits for table {}, which exceeds the maximum allowed number of "
              + "commits per table",
          numDeleted,
          tableId);
    }
    if (!allDeleted) {
      LOGGER.error(
          "Failed to purge all commits for table {} after {} iterations", tableId, MAX_ITERATIONS);
    }
  }
}
