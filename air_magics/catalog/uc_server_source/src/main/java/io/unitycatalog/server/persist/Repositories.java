package io.unitycatalog.server.persist;

import io.unitycatalog.server.auth.decorator.KeyMapper;
import io.unitycatalog.server.persist.utils.ExternalLocationUtils;
import io.unitycatalog.server.utils.ServerProperties;
import lombok.Getter;
import org.hibernate.SessionFactory;

/**
 * Each server instance has a set of repositories that are used to interact with the database. This
 * class is used to create repositories once which are then shared across the server instance.
 */
@Getter
public class Repositories {
  private final SessionFactory sessionFactory;
  private final ExternalLocationUtils externalLocationUtils;

  private final CatalogRepository catalogRepository;
  private final SchemaRepository schemaRepository;
  private final TableRepository tableRepository;
  private final StagingTableRepository stagingTableRepository;
  private final VolumeRepository volumeRepository;
  private final UserRepository userRepository;
  private final MetastoreRepository metastoreRepository;
  private final FunctionRepository functionRepository;
  private final ModelRepository modelRepository;
  private final CredentialRepository credentialRepository;
  private final ExternalLocationRepository externalLocationRepository;
  private final DeltaCommitRepository deltaCommitRepository;
  private final DependencyRepository dependencyRepository;

  private final KeyMapper keyMapper;

  public Repositories(SessionFactory sessionFactory, ServerProperties serverProperties) {
    this.sessionFactory = sessionFactory;
    this.externalLocationUtils = new ExternalLocationUtils(sessionFactory);

    this.catalogRepository = new CatalogRepository(this, sessionFactory);
    this.schemaRepository = new SchemaRepository(this, sessionFactory);
    this.tableRepository = new TableRepository(this, sessionFactory, serverProperties);
    this.stagingTableRepository =
        new StagingTableRepository(this, sessionFactory, serverProperties);
    this.volumeRepository = new VolumeRepository(this, sessionFactory);
    this.userRepository = new UserRepository(this, sessionFactory);
    this.metastoreRepository = new MetastoreRepository(this, sessionFactory);
    this.functionRepository = new FunctionRepository(this, sessionFactory);
    this.modelRepository = new ModelRepository(this, sessionFactory, serverProperties);
    this.credentialRepository = new CredentialRepository(this, sessionFactory, serverProperties);
    this.externalLocationRepository = new ExternalLocationRepository(this, sessionFactory);
    this.deltaCommitRepository = new DeltaCommitRepository(sessionFactory, serverProperties);
    this.dependencyRepository = new DependencyRepository();

    // KeyMapper uses all the repositories above.
    this.keyMapper = new KeyMapper(this);
  }
}
